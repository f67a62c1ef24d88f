// Versions of a conversation. Editing a message or regenerating a reply starts a new version
// from that point; the earlier ones are kept. The conversation's `messages` is always the path
// being shown (what is sent to the model and searched); a message that has versions carries a
// Fork holding the other versions' tails (that message and everything after it), with an empty
// placeholder at the index of the version being shown. Switching swaps the tails, so forks
// further down travel with their own tail.
import type { Fork, StoredMessage } from './storage';

function withoutFork(m: StoredMessage): StoredMessage {
  const { fork: _omit, ...plain } = m;
  return plain;
}

// The path from index i on, as a version to keep (its head carries no fork: the fork stays on
// whichever head is shown).
function tailAt(path: StoredMessage[], i: number): StoredMessage[] {
  const [head, ...rest] = path.slice(i);
  return head ? [withoutFork(head), ...rest] : [];
}

export function versionCount(m: StoredMessage): number {
  return m.fork?.versions.length ?? 1;
}

// The fork a new version of position i gets: the shown tail kept, a new last version active.
export function forkForNewVersion(path: StoredMessage[], i: number): Fork {
  const f = path[i]?.fork ?? { versions: [[]], active: 0 };
  const versions = f.versions.map((v, k) => (k === f.active ? tailAt(path, i) : v));
  return { versions: [...versions, []], active: versions.length };
}

// The path with `head` as a new version of position i (later messages belong to the old one).
export function addVersion(path: StoredMessage[], i: number, head: StoredMessage): StoredMessage[] {
  return [...path.slice(0, i), { ...withoutFork(head), fork: forkForNewVersion(path, i) }];
}

// The path showing version k of position i.
export function switchVersion(path: StoredMessage[], i: number, k: number): StoredMessage[] {
  const f = path[i]?.fork;
  if (!f || k === f.active || k < 0 || k >= f.versions.length) return path;
  const next = f.versions[k]!;
  if (!next.length) return path;
  const versions = f.versions.map((v, j) => (j === f.active ? tailAt(path, i) : j === k ? [] : v));
  return [...path.slice(0, i), { ...withoutFork(next[0]!), fork: { versions, active: k } }, ...next.slice(1)];
}

// Every message of every version (for search).
export function* allMessages(path: StoredMessage[]): Generator<StoredMessage> {
  for (const m of path) {
    yield m;
    for (const v of m.fork?.versions ?? []) yield* allMessages(v);
  }
}
