// The agentbox dashboard: plain JavaScript on the gateway's own REST routes and WebSockets.
// Every URL is relative to the page, so the dashboard also works under a reverse-proxy prefix.
"use strict";

const root = new URL(".", location.href);
const wsRoot = new URL(root.href);
wsRoot.protocol = location.protocol === "https:" ? "wss:" : "ws:";

async function api(path, options = {}) {
  const response = await fetch(new URL(path, root), { credentials: "same-origin", ...options });
  const body = await response.json().catch(() => null);
  if (!response.ok || !body || body.success === false) {
    const message = (body && (body.message || (body.error && body.error.message))) || `HTTP ${response.status}`;
    throw new Error(message);
  }
  return body.data;
}

function postJson(path, payload) {
  return api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(payload) });
}

function element(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

// -- programs ----------------------------------------------------------------------------------
async function showStatus() {
  const list = document.getElementById("status-list");
  try {
    const caps = await api("v1/capabilities");
    const ready = document.body.dataset.ready;  // the report's "up" status, from the gateway
    const rows = [
      ["Shell", caps.exec.status === ready, caps.exec.bash || "bash not found"],
      ["Python", caps.code_interpreter.python, caps.code_interpreter.python ? "ready" : "not installed"],
      ["Node.js", caps.code_interpreter.javascript, caps.code_interpreter.javascript ? "ready" : "not installed"],
      ["Files", true, "ready"],
      ["Browser", caps.browser.status === ready, caps.browser.browser || caps.browser.detail || caps.browser.status],
    ];
    list.replaceChildren(...rows.map(([name, up, detail]) =>
      element("li", { className: up ? "up" : "down", textContent: `${name}: ${detail}` })));
  } catch (error) {
    list.replaceChildren(element("li", { className: "down", textContent: `Status unavailable: ${error.message}` }));
  }
}

// -- live view ---------------------------------------------------------------------------------
async function showLiveView() {
  const body = document.getElementById("live-body");
  let reason;
  try {
    const info = await api("v1/browser/info");
    if (info.vnc_url) {
      body.replaceChildren(element("iframe", { src: info.vnc_url, title: "Live view of the browser" }));
      return;
    }
    reason = "this gateway has no display (a bare aiod start runs the browser headless; in the image " +
      "DISABLE_VNC=true turns the live view off).";
  } catch (error) {
    reason = `the browser is not available (${error.message}).`;
  }
  body.replaceChildren(element("p", { className: "muted", id: "live-unavailable",
    textContent: `Live view unavailable: ${reason}` }));
}

// -- terminal ----------------------------------------------------------------------------------
// A durable /v2/pty session, named once per browser tab (sessionStorage): a reload finds it and
// reattaches with a replay of its recent output, instead of starting a new shell.
const TERMINAL_KEY = "agentbox.terminal";
const TERMINAL_REPLAY = 1024 * 1024;

async function terminalSocket(term) {
  let id = sessionStorage.getItem(TERMINAL_KEY);
  const found = id !== null &&
    (await fetch(new URL(`v2/pty/sessions/${encodeURIComponent(id)}`, root), { credentials: "same-origin" })).ok;
  if (!found) {
    const random = crypto.getRandomValues(new Uint8Array(8));
    id = `dashboard-${Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("")}`;
    await postJson("v2/pty/sessions", { id, cols: term.cols, rows: term.rows });
    sessionStorage.setItem(TERMINAL_KEY, id);
  }
  const url = new URL(`v2/pty/sessions/${encodeURIComponent(id)}/ws`, wsRoot);
  const query = { durable: "true", protocol: "binary" };
  if (found) Object.assign(query, { restore: "true", replay_bytes: String(TERMINAL_REPLAY) });
  url.search = new URLSearchParams(query).toString();
  return url;
}

function startTerminal() {
  window.agentboxTerminal = attachTerminal(
    document.getElementById("terminal"), document.getElementById("terminal-state"), terminalSocket);
}

// -- files -------------------------------------------------------------------------------------
const pathInput = document.getElementById("file-path");
const fileMessage = document.getElementById("file-message");
const fileView = document.getElementById("file-view");

function parentOf(path) {
  const trimmed = path.replace(/\/+$/, "");
  return trimmed.slice(0, trimmed.lastIndexOf("/")) || "/";
}

function humanSize(size) {
  if (size == null) return "";
  const units = ["B", "KiB", "MiB", "GiB"];
  let value = size, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return `${unit ? value.toFixed(1) : value} ${units[unit]}`;
}

// The folder asked for last is the one shown: an earlier listing answered later (the first one, say,
// while the gateway builds its REST door) must not replace it.
let listings = 0;

async function listFolder(path) {
  const listing = ++listings;
  fileMessage.textContent = "";
  fileView.hidden = true;
  try {
    const data = await postJson("v1/file/list", { path, include_size: true, sort_by: "name" });
    if (listing !== listings) return;
    pathInput.value = data.path;
    const rows = data.files.map((entry) => {
      const open = element("button", { type: "button", className: "link", textContent: entry.name + (entry.is_directory ? "/" : "") });
      open.addEventListener("click", () => entry.is_directory ? listFolder(entry.path) : viewFile(entry.path));
      const actions = element("td");
      if (!entry.is_directory) {
        const url = new URL("v1/file/download", root);
        url.searchParams.set("path", entry.path);
        actions.append(element("a", { href: url.href, download: entry.name, textContent: "download", className: "download" }));
      }
      const row = element("tr", {},
        element("td", {}, open), element("td", { textContent: entry.is_directory ? "" : humanSize(entry.size) }),
        element("td", { textContent: (entry.modified_time || "").slice(0, 19).replace("T", " ") }), actions);
      row.dataset.path = entry.path;
      return row;
    });
    document.querySelector("#file-list tbody").replaceChildren(...rows);
    if (data.truncated) fileMessage.textContent = "Only the first entries are shown.";
  } catch (error) {
    if (listing === listings) fileMessage.textContent = `Cannot list ${path}: ${error.message}`;
  }
}

async function viewFile(path) {
  try {
    const data = await postJson("v1/file/read", { file: path });
    fileView.textContent = data.content;
    fileView.hidden = false;
    fileMessage.textContent = path;
  } catch (error) {
    fileMessage.textContent = `Cannot show ${path}: ${error.message}`;
  }
}

async function upload(files) {
  const folder = pathInput.value;
  for (const file of files) {
    const form = new FormData();
    form.append("file", file, file.name);
    form.append("path", `${folder.replace(/\/+$/, "")}/${file.name}`);
    try {
      await api("v1/file/upload", { method: "POST", body: form });
    } catch (error) {
      fileMessage.textContent = `Upload of ${file.name} failed: ${error.message}`;
      return;
    }
  }
  await listFolder(folder);
  fileMessage.textContent = `Uploaded ${files.length} file(s).`;
}

document.getElementById("file-nav").addEventListener("submit", (event) => {
  event.preventDefault();
  listFolder(pathInput.value);
});
document.getElementById("file-up").addEventListener("click", () => listFolder(parentOf(pathInput.value)));
document.getElementById("file-upload").addEventListener("change", (event) => {
  upload([...event.target.files]);
  event.target.value = "";
});

// -- previews ----------------------------------------------------------------------------------
// Each app opens on its own origin (http://<port>.localhost:<gateway port>/ and the like), in a new
// tab. With a key, the link carries a preview ticket minted on the click: good once, for that
// port only; the preview origin trades it for a cookie of its own.
async function openPreview(entry) {
  let url = entry.preview_url;
  if (document.body.dataset.auth === "key") {
    try {
      const data = await postJson("tickets/preview", { port: entry.port });
      if (data.url) url = data.url;
    } catch (error) {
      document.getElementById("preview-list").prepend(
        element("li", { className: "down", textContent: `Cannot open port ${entry.port}: ${error.message}` }));
      return;
    }
  }
  window.open(url, "_blank", "noopener,noreferrer");
}

async function showPreviews() {
  const list = document.getElementById("preview-list");
  try {
    const sandbox = await fetch(new URL("v1/sandbox", root), { credentials: "same-origin" }).then((r) => r.json());
    const previews = (sandbox.detail && sandbox.detail.system.previews) || [];
    if (!previews.length) {
      list.replaceChildren(element("li", { className: "muted", textContent: "No app is listening yet." }));
      return;
    }
    list.replaceChildren(...previews.map((entry) => {
      const link = element("a", { href: entry.preview_url, target: "_blank", rel: "noopener noreferrer",
        textContent: `port ${entry.port}`, className: "preview-link" });
      link.dataset.port = entry.port;
      link.addEventListener("click", (event) => { event.preventDefault(); openPreview(entry); });
      return element("li", {}, link, " ", element("code", { className: "muted", textContent: entry.preview_url }));
    }));
  } catch (error) {
    list.replaceChildren(element("li", { className: "down", textContent: `Previews unavailable: ${error.message}` }));
  }
}
document.getElementById("previews-refresh").addEventListener("click", showPreviews);

// -- MCP snippet and sign-out ------------------------------------------------------------------
function showConnect() {
  const url = new URL("mcp", root).href;
  const keyed = document.body.dataset.auth === "key";
  document.getElementById("mcp-url").textContent = url;
  const server = { type: "http", url };
  if (keyed) server.headers = { Authorization: "Bearer ${AIO_API_KEY}" };
  document.getElementById("mcp-snippet").textContent = JSON.stringify({ mcpServers: { agentbox: server } }, null, 2);
  const logout = document.getElementById("logout");
  logout.hidden = !keyed;
  logout.addEventListener("click", async () => {
    await fetch(new URL("logout", root), { method: "POST", credentials: "same-origin" });
    location.reload();
  });
}

showConnect();
showStatus();
showPreviews();
showLiveView();
startTerminal();
listFolder(new URLSearchParams(location.search).get("path") || document.body.dataset.home || "/");
