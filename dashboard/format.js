// Numbers for people: counts with separators, bytes in kB/MB/GB, durations, dates.

const counts = new Intl.NumberFormat("en");

export function count(value) {
  return value == null ? "–" : counts.format(value);
}

export function bytes(value) {
  if (value == null) return "–";
  const units = ["B", "kB", "MB", "GB", "TB", "PB"];
  let scaled = value;
  let unit = 0;
  while (scaled >= 1000 && unit < units.length - 1) {
    scaled /= 1000;
    unit += 1;
  }
  const digits = unit === 0 || scaled >= 100 ? 0 : 1;
  return `${scaled.toFixed(digits)} ${units[unit]}`;
}

export function rate(bytesPerSecond) {
  return bytesPerSecond == null ? null : `${bytes(bytesPerSecond)}/s`;
}

export function duration(seconds) {
  if (seconds == null) return null;
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${String(minutes % 60).padStart(2, "0")} min`;
  return `${Math.round(hours / 24)} days`;
}

export function percent(done, total) {
  if (!total) return null;
  return `${Math.min(100, Math.floor((done / total) * 100))} %`;
}

export function date(text) {
  if (!text) return "";
  const value = new Date(text);
  return Number.isNaN(value.getTime()) ? text : value.toLocaleString();
}
