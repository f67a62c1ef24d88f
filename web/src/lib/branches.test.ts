import { describe, expect, it } from 'vitest';
import { addVersion, allMessages, forkForNewVersion, switchVersion, versionCount } from './branches';
import type { StoredMessage } from './storage';

const msg = (id: string, role: 'user' | 'assistant', content = id): StoredMessage => ({ id, role, content });
const texts = (path: StoredMessage[]) => path.map((m) => m.content);

describe('versions of a conversation', () => {
  const original = [msg('q1', 'user'), msg('a1', 'assistant'), msg('q2', 'user'), msg('a2', 'assistant')];

  it('editing a message keeps the old one and everything after it as version 1', () => {
    const path = addVersion(original, 2, msg('q2b', 'user'));
    expect(texts(path)).toEqual(['q1', 'a1', 'q2b']);
    expect(versionCount(path[2]!)).toBe(2);
    expect(path[2]!.fork!.active).toBe(1);
    expect(texts(path[2]!.fork!.versions[0]!)).toEqual(['q2', 'a2']);
    expect(path[2]!.fork!.versions[1]).toEqual([]);
    // The earlier messages are untouched.
    expect(path.slice(0, 2)).toEqual(original.slice(0, 2));
  });

  it('switches back and forth without losing either version', () => {
    let path = [...addVersion(original, 2, msg('q2b', 'user')), msg('a2b', 'assistant')];
    path = switchVersion(path, 2, 0);
    expect(texts(path)).toEqual(['q1', 'a1', 'q2', 'a2']);
    expect(path[2]!.fork!.active).toBe(0);
    expect(texts(path[2]!.fork!.versions[1]!)).toEqual(['q2b', 'a2b']);
    path = switchVersion(path, 2, 1);
    expect(texts(path)).toEqual(['q1', 'a1', 'q2b', 'a2b']);
    // Only the shown head carries the fork.
    expect(path[2]!.fork!.versions[0]![0]!.fork).toBeUndefined();
    // Out of range or the same version: nothing changes.
    expect(switchVersion(path, 2, 5)).toBe(path);
    expect(switchVersion(path, 2, 1)).toBe(path);
    expect(switchVersion(path, 0, 1)).toBe(path);
  });

  it('regenerating adds a version of the reply; a third version counts on', () => {
    const fork = forkForNewVersion(original, 3);
    expect(fork.active).toBe(1);
    let path = [...original.slice(0, 3), { ...msg('a2b', 'assistant'), fork }];
    path = [...path.slice(0, 3), { ...msg('a2c', 'assistant'), fork: forkForNewVersion(path, 3) }];
    expect(versionCount(path[3]!)).toBe(3);
    expect(path[3]!.fork!.versions.map((v) => texts(v))).toEqual([['a2'], ['a2b'], []]);
    path = switchVersion(path, 3, 0);
    expect(texts(path)).toEqual(['q1', 'a1', 'q2', 'a2']);
    expect(path[3]!.fork!.versions.map((v) => texts(v))).toEqual([[], ['a2b'], ['a2c']]);
  });

  it('keeps versions further down inside the version they belong to', () => {
    // Version 2 of a2, then an edit of q1: the a2 fork travels with the old tail.
    let path = [...original.slice(0, 3), { ...msg('a2b', 'assistant'), fork: forkForNewVersion(original, 3) }];
    path = [...addVersion(path, 0, msg('q1b', 'user')), msg('a1b', 'assistant')];
    expect(texts(path)).toEqual(['q1b', 'a1b']);
    path = switchVersion(path, 0, 0);
    expect(texts(path)).toEqual(['q1', 'a1', 'q2', 'a2b']);
    expect(versionCount(path[3]!)).toBe(2);
    expect(texts(switchVersion(path, 3, 0))).toEqual(['q1', 'a1', 'q2', 'a2']);
    expect([...allMessages(path)].map((m) => m.content).sort()).toEqual(
      ['a1', 'a1b', 'a2', 'a2b', 'q1', 'q1b', 'q2'].sort(),
    );
  });
});
