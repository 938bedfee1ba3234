// An xterm.js terminal on one of the gateway's terminal WebSockets (binary frames are terminal bytes
// both ways; a JSON text frame resizes), shared by the dashboard (a durable /v2/pty session, so a
// reload reattaches) and the standalone page /terminal/ (a shell for the socket's life).
"use strict";

// socketUrl: the socket's URL, or a function of the terminal resolving to it (the dashboard makes
// or finds its durable session first). Text frames from the gateway are JSON control messages.
function attachTerminal(container, state, socketUrl) {
  const term = new Terminal({ cursorBlink: true, fontSize: 13, convertEol: false });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(container);
  fit.fit();
  const encoder = new TextEncoder();
  let socket = null;
  let ended = null;
  const open = () => socket !== null && socket.readyState === WebSocket.OPEN;
  const resize = () => {
    fit.fit();
    if (open()) socket.send(JSON.stringify({ type: "resize", cols: term.cols, rows: term.rows }));
  };
  const control = (text) => {
    let message = null;
    try { message = JSON.parse(text); } catch (error) { return; }
    if (message.type === "exit") ended = `shell exited (${message.exit_code})`;
    else if (message.type === "error") ended = message.data || message.message || "error";
  };
  Promise.resolve(typeof socketUrl === "function" ? socketUrl(term) : socketUrl).then((url) => {
    socket = new WebSocket(url);
    socket.binaryType = "arraybuffer";
    socket.onopen = () => { state.textContent = "connected"; resize(); term.focus(); };
    socket.onmessage = (event) => {
      if (typeof event.data === "string") control(event.data);
      else term.write(new Uint8Array(event.data));
    };
    socket.onclose = (event) => { state.textContent = ended || `closed (${event.code})`; };
  }).catch((error) => { state.textContent = `unavailable (${error.message})`; });
  term.onData((data) => { if (open()) socket.send(encoder.encode(data)); });
  // The panel, not only the window, decides the size: it is laid out (and its font loaded) after
  // the first fit, and it changes when the page around it does.
  let pending = false;
  new ResizeObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; resize(); });
  }).observe(container);
  return term;
}

// The standalone page: the socket beside it (relative, so a reverse-proxy prefix is kept).
if (document.body.dataset.page === "terminal") {
  const socketUrl = new URL("ws", location.href);
  socketUrl.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  socketUrl.search = "";
  window.agentboxTerminal = attachTerminal(
    document.getElementById("terminal"), document.getElementById("terminal-state"), socketUrl);
}
