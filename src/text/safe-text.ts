/**
 * Text from outside (upstream field names, error bodies) made safe to show to people: on a
 * terminal, where ESC sequences move the cursor, recolour or retitle the window, and in chat, where
 * `<!channel>` pings everyone and `<https://…|Log in again>` is a link under another name.
 */

/**
 * C0 controls but newline and tab, DEL, C1 controls (CSI among them), and the bidirectional
 * overrides and isolates that make text read other than it is stored.
 */
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `text` without control characters (see CONTROLS); newlines and tabs stay. */
export function stripControls(text: string): string {
  return text.replace(CONTROLS, '');
}

/**
 * For the chat formats the webhook text is documented for: Slack's three escapes (`&`, `<`, `>`),
 * which Mattermost and Teams, rendering Markdown with HTML entities, show as the characters; and a
 * zero-width space after the `@` of a whole-channel mention, which Mattermost would act on.
 */
export function chatText(text: string): string {
  return stripControls(text)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/@(channel|here|all|everyone)\b/gi, '@\u200b$1');
}

/**
 * A JSON log line with its control characters gone, escaped (`\u001b`, `\r`, `\b`, `\f`) or raw,
 * newline and tab escapes kept: what pino-pretty, which prints values unescaped, may show on a
 * terminal. A backslash that is itself escaped starts no escape.
 */
const JSON_CONTROL =
  /(?<=(?:^|[^\\])(?:\\\\)*)\\(?:u00(?:0[0-8bcef]|1[0-9a-f]|7f|[89][0-9a-f])|u20(?:2[a-e]|6[6-9])|[bfr])/gi;

export function stripJsonControls(line: string): string {
  return stripControls(line).replace(JSON_CONTROL, '');
}
