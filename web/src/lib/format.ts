export function formatBytes(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return '–';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = 0;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${v >= 100 || u === 0 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}

export function formatNumber(v: number | undefined, digits = 1): string {
  if (v === undefined || !Number.isFinite(v)) return '–';
  return v.toFixed(digits);
}

// "in 4 minutes", "12 seconds ago": expiry of a loaded model.
export function relativeTime(iso: string, now = Date.now()): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const d = t - now;
  const abs = Math.abs(d);
  if (abs > 100 * 365 * 86400e3) return 'never';
  const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  if (abs < 60e3) return rtf.format(Math.round(d / 1e3), 'second');
  if (abs < 3600e3) return rtf.format(Math.round(d / 60e3), 'minute');
  if (abs < 86400e3) return rtf.format(Math.round(d / 3600e3), 'hour');
  return rtf.format(Math.round(d / 86400e3), 'day');
}
