// The view's side of the MCP Apps bridge (SEP-1865): JSON-RPC over postMessage with the host that
// framed it. The ui/initialize handshake, the tool result the host sends (its _meta carries the
// view's grant under "agentbox/view"), and the size of the view for hosts that fit the frame to it.
"use strict";
const agentboxBridge = (() => {
  let nextId = 1;
  let host = {};
  const pending = new Map();
  const listeners = [];
  const post = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    post({ id, method, params });
  });
  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === undefined) {
      const waiting = pending.get(message.id);
      if (!waiting) return;
      pending.delete(message.id);
      if (message.error) waiting.reject(new Error(message.error.message || "the host refused"));
      else waiting.resolve(message.result || {});
    } else if (message.method === "ui/notifications/tool-result") {
      listeners.forEach((listener) => listener(message.params || {}));
    } else if (message.id !== undefined) {
      post({ id: message.id, result: {} }); // ui/resource-teardown and the like: nothing to save
    }
  });
  const size = () => post({
    method: "ui/notifications/size-changed",
    params: { width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight },
  });
  return {
    async start(name) {
      host = await request("ui/initialize", {
        protocolVersion: "2026-01-26",
        appInfo: { name, version: "1.0.0" },
        appCapabilities: { availableDisplayModes: ["inline"] },
      });
      post({ method: "ui/notifications/initialized", params: {} });
      new ResizeObserver(size).observe(document.body);
      return host;
    },
    onResult(listener) { listeners.push(listener); },
    // The tool called again through the host (a fresh grant), where the host proxies tool calls.
    async again(tool) {
      const capabilities = host.hostCapabilities || {};
      return capabilities.serverTools ? request("tools/call", { name: tool, arguments: {} }) : null;
    },
    view(result) { return (result._meta || {})["agentbox/view"] || null; },
    text(result) {
      return (result.content || []).filter((block) => block.type === "text").map((block) => block.text).join("\n");
    },
  };
})();
