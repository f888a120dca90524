// Times as the pages show them: a countdown, and a date in UTC.

/**
 * A duration as "1 d 02:03:04" / "02:03:04" / "03:04", rounded up to the second: a countdown
 * shows 00:00 when its moment comes, not a second before.
 */
export function durationText(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const d = Math.floor(s / 86400);
  const hms = [Math.floor((s % 86400) / 3600), Math.floor((s % 3600) / 60), s % 60].map((n) => String(n).padStart(2, "0"));
  if (d > 0) return `${d} d ${hms.join(":")}`;
  return hms[0] === "00" ? hms.slice(1).join(":") : hms.join(":");
}

/** A date and time in UTC, to the second (`len` 19) or to the minute (16); else the raw value. */
export function timeText(ms, len = 19) {
  const d = new Date(ms);
  return Number.isFinite(d.getTime()) ? `${d.toISOString().replace("T", " ").slice(0, len)} UTC` : String(ms);
}
