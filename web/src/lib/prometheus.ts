// Prometheus text exposition format (what /metrics serves), parsed generically: every sample
// with its labels, so the engine view does not depend on which metrics the server has today.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseValue(s: string): number {
  if (s === '+Inf' || s === 'Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  if (s === 'NaN') return NaN;
  const v = Number(s);
  if (s === '' || Number.isNaN(v)) throw new Error(`bad sample value "${s}"`);
  return v;
}

// Parses `{a="x",b="y\"z"}` starting at text[i] === '{'; returns the labels and the index
// after the closing brace.
function parseLabels(text: string, i: number): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  i++;
  for (;;) {
    while (text[i] === ' ' || text[i] === ',') i++;
    if (text[i] === '}') return [labels, i + 1];
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new Error('label without a value');
    const name = text.slice(i, eq).trim();
    i = eq + 1;
    if (text[i] !== '"') throw new Error(`label ${name}: value is not quoted`);
    i++;
    let value = '';
    for (;;) {
      const ch = text[i];
      if (ch === undefined) throw new Error(`label ${name}: unterminated value`);
      if (ch === '\\') {
        const n = text[i + 1];
        value += n === 'n' ? '\n' : (n ?? '');
        i += 2;
      } else if (ch === '"') {
        i++;
        break;
      } else {
        value += ch;
        i++;
      }
    }
    labels[name] = value;
  }
}

// Malformed lines are skipped (and counted) rather than losing the whole scrape.
export function parsePrometheus(text: string): { samples: Sample[]; skipped: number } {
  const samples: Sample[] = [];
  let skipped = 0;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    try {
      const m = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
      if (!m) throw new Error('no metric name');
      const name = m[0];
      let i = name.length;
      let labels: Record<string, string> = {};
      if (line[i] === '{') [labels, i] = parseLabels(line, i);
      const rest = line.slice(i).trim().split(/\s+/);
      samples.push({ name, labels, value: parseValue(rest[0] ?? '') });
    } catch {
      skipped++;
    }
  }
  return { samples, skipped };
}
