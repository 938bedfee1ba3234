// Loaded by the gateway into noVNC's page (/vnc/index.html): a live view opened to be watched starts
// with the picture, not with noVNC's control bar over it. noVNC's own module has run by now (this
// module imports it, and both run before the first paint), so closing the bar here means it is never
// drawn open; its handle stays at the side for a person who wants the controls.
import UI from "./app/ui.js";

if (UI.rfb) {  // connecting on load (autoconnect): nothing to choose in the bar yet
  document.getElementById("noVNC_control_bar").classList.remove("noVNC_open");
}
