/**
 * A network of the test's own, for upstreams a proxy must reach at an address other than loopback
 * (loopback targets are never proxied): a network namespace and a veth pair, addressed from
 * 198.18.0.0/15 (RFC 2544's range for tests), never the machine's own interfaces. The upstreams
 * listen on the host end; the namespace holds the other. Needs root (or CAP_NET_ADMIN) and iproute2.
 */
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { promisify } from 'node:util';

const run = promisify(execFile);
const IP = 'ip';
/** Namespaces are named wrs-<pid>-<random>: one whose process is gone is a leftover to remove. */
const NAME = /^wrs-(\d+)-[0-9a-f]+$/;

export interface TestNetwork {
  /** The host end's address, where a test's upstreams listen (198.18.x.y). */
  address: string;
  /** The namespace end's address. */
  peer: string;
  namespace: string;
  /** Removes the namespace and the veth pair; safe to call twice. */
  close(): Promise<void>;
}

export type TestNetworkAttempt = { ok: true; network: TestNetwork } | { ok: false; failed: string };

/** Makes the network, or says which command failed and why (having removed what it made). */
export async function openTestNetwork(): Promise<TestNetworkAttempt> {
  await removeLeftovers();
  const tag = randomBytes(3).toString('hex');
  const namespace = `wrs-${process.pid}-${tag}`;
  // Interface names have at most 15 characters.
  const hostEnd = `wrsh${tag}`;
  const nsEnd = `wrsn${tag}`;
  // A random /30 of the 2^17 addresses: host end .1, namespace end .2 of it.
  const base = randomInt(0, 1 << 15) * 4;
  const address = ipv4(0xc6120000 + base + 1);
  const peer = ipv4(0xc6120000 + base + 2);
  const steps: string[][] = [
    ['netns', 'add', namespace],
    ['link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', nsEnd, 'netns', namespace],
    ['addr', 'add', `${address}/30`, 'dev', hostEnd],
    ['link', 'set', hostEnd, 'up'],
    ['-n', namespace, 'addr', 'add', `${peer}/30`, 'dev', nsEnd],
    ['-n', namespace, 'link', 'set', nsEnd, 'up'],
    ['-n', namespace, 'link', 'set', 'lo', 'up'],
  ];
  let closed = false;
  const removeSync = () => {
    if (closed) return;
    closed = true;
    spawnSync(IP, ['link', 'del', hostEnd], { stdio: 'ignore' });
    spawnSync(IP, ['netns', 'del', namespace], { stdio: 'ignore' });
  };
  // A worker that dies without its teardown still removes them as it exits.
  process.once('exit', removeSync);
  const close = async () => {
    if (closed) return;
    closed = true;
    process.off('exit', removeSync);
    // Deleting the namespace deletes its end of the pair, and with it the host end.
    await run(IP, ['link', 'del', hostEnd]).catch(() => undefined);
    await run(IP, ['netns', 'del', namespace]).catch(() => undefined);
  };
  for (const args of steps) {
    try {
      await run(IP, args);
    } catch (error) {
      await close();
      const detail = (error as { stderr?: string }).stderr?.trim() || (error as Error).message;
      return { ok: false, failed: `\`${IP} ${args.join(' ')}\` failed: ${detail}` };
    }
  }
  return { ok: true, network: { address, peer, namespace, close } };
}

/** Namespaces of test processes that are gone (killed before their teardown). */
async function removeLeftovers(): Promise<void> {
  const listed = await run(IP, ['netns', 'list']).catch(() => ({ stdout: '' }));
  for (const line of listed.stdout.split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const pid = NAME.exec(name)?.[1];
    if (pid === undefined || alive(Number(pid))) continue;
    await run(IP, ['netns', 'del', name]).catch(() => undefined);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}

function ipv4(n: number): string {
  return [24, 16, 8, 0].map((shift) => (n >>> shift) & 255).join('.');
}

/** What a proxy test needs, for describeWith: its programs and the network (with why it could not be made). */
export function needs(programs: string, attempt: TestNetworkAttempt | undefined): string {
  const why = attempt?.ok === false ? ` (${attempt.failed})` : '';
  return `${programs} and a network namespace of its own (iproute2, as root)${why}`;
}
