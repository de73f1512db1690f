import { describe, expect, it } from 'vitest';
import { chatText, stripControls, stripJsonControls } from '../../src/text/safe-text.js';

describe('text from outside, shown to people', () => {
  it('loses control characters (C0 but newline and tab, DEL, C1, bidi overrides)', () => {
    expect(stripControls('a\u001b[31mred\u001b]0;title\u0007\r\nb\tc\u007f\u009b2J\u202eevil\u2066')).toBe(
      'a[31mred]0;title\nb\tc2Jevil',
    );
  });

  it('is escaped for Slack, and a whole-channel mention is defused', () => {
    expect(chatText('<!channel> <https://example.com|Log in again> a&b @here @channel-ops')).toBe(
      '&lt;!channel&gt; &lt;https://example.com|Log in again&gt; a&amp;b @\u200bhere @\u200bchannel-ops',
    );
  });

  it('in a JSON log line loses escaped and raw control characters, and stays the same JSON otherwise', () => {
    const value = { msg: 'new field \u001b[2Jx\r', path: 'C:\\u001b\\dir', text: 'a\nb\tc' };
    const line = JSON.stringify(value);
    expect(JSON.parse(stripJsonControls(line))).toEqual({
      msg: 'new field [2Jx',
      path: 'C:\\u001b\\dir',
      text: 'a\nb\tc',
    });
  });
});
