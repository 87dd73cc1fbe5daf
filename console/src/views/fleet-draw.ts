// The fleet map's drawing: the cells in one pass (one fill per color, one stroke per kind of
// mark, names only when tiles hold them), and the focus ring on a canvas of its own, so that a
// key or the pointer moving redraws one or two cells' rings, not 10,000 cells.
import {
  DOWN_COLOR,
  LABEL_HEIGHT,
  type Layout,
  labelColor,
  markOf,
  utilization,
  utilizationColor,
} from "../model.js";

export const NAME_FONT = "11px system-ui, sans-serif";

/** Sizes a canvas to `width` × `height` CSS pixels at the screen's density; a context scaled to CSS pixels. */
function prepare(c: HTMLCanvasElement, width: number, height: number): CanvasRenderingContext2D {
  const dpr = devicePixelRatio || 1;
  const w = Math.round(width * dpr);
  const h = Math.round(height * dpr);
  if (c.width !== w || c.height !== h) {
    c.width = w;
    c.height = h;
    c.style.height = `${height}px`;
  }
  const g = c.getContext("2d")!;
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, width, height);
  return g;
}

/** Every cell, its marks and (with `names`) its host's name. */
export function drawCells(
  c: HTMLCanvasElement,
  layout: Layout,
  width: number,
  rc: string,
  names: boolean,
): void {
  const g = prepare(c, width, layout.height);
  g.font = "600 13px system-ui, sans-serif";
  g.fillStyle = "#1f2933";
  for (const l of layout.labels) g.fillText(`${l.name} · ${l.count} hosts`, l.x, l.y + LABEL_HEIGHT - 7);
  const { w, h } = layout;
  // cells by color (at most the ramp's 101, down, and no such class): one path and fill each
  const byColor = new Map<string, number[]>();
  const disabled: number[] = [];
  const forced: number[] = [];
  const building: number[] = [];
  layout.cells.forEach((cell, i) => {
    const mark = markOf(cell.host);
    const color =
      mark === "down" || mark === "forced-down" ? DOWN_COLOR : utilizationColor(utilization(cell.host, rc));
    const same = byColor.get(color);
    if (same) same.push(i);
    else byColor.set(color, [i]);
    if (mark === "disabled") disabled.push(i);
    if (mark === "forced-down") forced.push(i);
    if (cell.host.building > 0) building.push(i);
  });
  for (const [color, cells] of byColor) {
    g.fillStyle = color;
    g.beginPath();
    for (const i of cells) {
      const cell = layout.cells[i]!;
      g.rect(cell.x, cell.y, w, h);
    }
    g.fill();
  }
  if (disabled.length) {
    g.strokeStyle = "#1f2933";
    g.lineWidth = 1;
    g.beginPath();
    for (const i of disabled) {
      const cell = layout.cells[i]!;
      g.moveTo(cell.x, cell.y + h);
      g.lineTo(cell.x + w, cell.y);
    }
    g.stroke();
  }
  if (forced.length) {
    const line = Math.max(1, Math.min(w, h) / 7);
    g.strokeStyle = "#a855f7";
    g.lineWidth = line;
    g.beginPath();
    for (const i of forced) {
      const cell = layout.cells[i]!;
      g.rect(cell.x + line / 2, cell.y + line / 2, w - line, h - line);
    }
    g.stroke();
  }
  const dot = Math.min(w, h) / 5;
  if (building.length && dot >= 1.6) {
    // at the cell's right end when a name fills the rest, else its center
    const cx = (x: number) => (names ? x + w - h / 2 : x + w / 2);
    g.fillStyle = "#ffffff";
    g.strokeStyle = "#1f2933";
    g.lineWidth = 1;
    g.beginPath();
    for (const i of building) {
      const cell = layout.cells[i]!;
      g.moveTo(cx(cell.x) + dot, cell.y + h / 2);
      g.arc(cx(cell.x), cell.y + h / 2, dot, 0, Math.PI * 2);
    }
    g.fill();
    g.stroke();
  }
  if (names) {
    g.font = NAME_FONT;
    g.textBaseline = "middle";
    for (const cell of layout.cells) {
      const room = w - 8 - (cell.host.building > 0 && dot >= 1.6 ? h / 2 : 0);
      const mark = markOf(cell.host);
      g.fillStyle =
        mark === "down" || mark === "forced-down" ? "#ffffff" : labelColor(utilization(cell.host, rc));
      g.fillText(cell.host.host, cell.x + 4, cell.y + h / 2 + 0.5, room);
    }
  }
}

/** The focus ring of each of `cells` (the keyboard's and the pointer's). */
export function drawFocus(
  c: HTMLCanvasElement,
  layout: Layout,
  width: number,
  cells: readonly number[],
): void {
  const g = prepare(c, width, layout.height);
  g.strokeStyle = "#0b69a3";
  g.lineWidth = 2;
  for (const i of cells) {
    const cell = layout.cells[i];
    if (cell) g.strokeRect(cell.x - 1, cell.y - 1, layout.w + 2, layout.h + 2);
  }
}
