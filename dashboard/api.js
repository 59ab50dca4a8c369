// The packd API as the page uses it: URLs relative to the page (so a dashboard served under a
// path prefix still finds its API), the API key from session storage, and problem+json errors.

const apiRoot = new URL("../", document.baseURI);
const keyName = "packd.api-key";

/** An answer that is not 2xx: `status` and the RFC 9457 problem (`errors[].pointer`, …). */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

/** The API key, kept for this tab only (sessionStorage), never in localStorage or a cookie. */
export const apiKey = {
  get() { return sessionStorage.getItem(keyName) || ""; },
  set(key) { sessionStorage.setItem(keyName, key); },
  clear() { sessionStorage.removeItem(keyName); },
};

/** An absolute URL of `path` (`v1/packs`) on this packd. */
export function apiURL(path) {
  return new URL(path, apiRoot);
}

function authorization() {
  const key = apiKey.get();
  return key ? { Authorization: `Bearer ${key}` } : {};
}

/** One request; resolves with the decoded body (null for 204), rejects with ApiError. */
export async function request(method, path, body) {
  const headers = { Accept: "application/json, application/problem+json", ...authorization() };
  const init = { method, headers, cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(apiURL(path), init);
  } catch (error) {
    throw new ApiError(0, { title: "packd is unreachable", detail: `packd did not answer (${error.message})` });
  }
  if (response.status === 204) return null;
  const type = response.headers.get("Content-Type") || "";
  const data = type.includes("json") ? await response.json().catch(() => null) : await response.text();
  if (!response.ok) {
    const problem = data && typeof data === "object" ? data : { title: response.statusText, detail: String(data || "").slice(0, 500) };
    throw new ApiError(response.status, problem);
  }
  return data;
}

/** Origins that are this packd: the page's, and `--public-url`'s (where offline styles point). */
const packdOrigins = new Set([apiRoot.origin]);

export function trustPublicOrigin(origin) {
  if (origin) packdOrigins.add(origin);
}

/** Headers for MapLibre's requests (offline style, tiles, sprites, glyphs): the key only to packd. */
export function mapRequestHeaders(url) {
  let origin;
  try {
    origin = new URL(url).origin;
  } catch {
    return {};
  }
  return packdOrigins.has(origin) ? authorization() : {};
}

/** `GET /v1/events`: an EventSource cannot send headers, so the key travels as `access_token`. */
export function eventStream() {
  const url = apiURL("v1/events");
  const key = apiKey.get();
  if (key) url.searchParams.set("access_token", key);
  return new EventSource(url);
}

/**
 * Starts a download of `url` (absolute, on this packd). Without a key a plain link does it
 * (streamed to disk by the browser); with one the request needs its Authorization header, so the
 * body is fetched into a Blob (which Chromium and Firefox keep on disk when large) and saved.
 */
export async function download(url, filename) {
  const key = apiKey.get();
  const link = document.createElement("a");
  link.download = filename;
  if (!key) {
    link.href = url;
    link.click();
    return;
  }
  const response = await fetch(url, { headers: authorization() });
  if (!response.ok) {
    const problem = await response.json().catch(() => ({ title: response.statusText }));
    throw new ApiError(response.status, problem);
  }
  const blob = await response.blob();
  link.href = URL.createObjectURL(blob);
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}
