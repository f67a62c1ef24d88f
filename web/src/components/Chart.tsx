import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';

export interface SeriesSpec {
  label: string;
  color: string;
}

// A uPlot line chart over time that follows its container's width. `data` is
// [times, ...one array per series]; gaps (undefined) are left open.
export function Chart(props: { title: string; series: SeriesSpec[]; data: (number | null)[][]; unit?: string }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const key = props.series.map((s) => s.label).join('|');

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: 160,
      legend: { show: true, live: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] } },
      axes: [
        {
          stroke: 'currentColor',
          grid: { stroke: 'rgba(128,128,128,0.2)' },
          space: 60,
          values: '{HH}:{mm}:{ss}',
        },
        { stroke: 'currentColor', grid: { stroke: 'rgba(128,128,128,0.2)' }, size: 50 },
      ],
      series: [
        {},
        ...props.series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => (v == null ? '–' : `${+v.toFixed(2)}${props.unit ?? ''}`),
        })),
      ],
    };
    plot.current = new uPlot(opts, props.data as uPlot.AlignedData, el);
    const ro = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(200, el.clientWidth), height: 160 }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, [key]);

  useEffect(() => {
    plot.current?.setData(props.data as uPlot.AlignedData);
  }, [props.data]);

  return (
    <figure class="chart card">
      <figcaption>{props.title}</figcaption>
      <div ref={box} role="img" aria-label={`${props.title} chart`} />
    </figure>
  );
}
