/* A websocket that keeps itself open: reconnects with back-off and shows its state. */
"use strict";
window.allotLive = function (path, onMessage, badge) {
  let delay = 500;
  let socket = null;
  function show(state, text) {
    if (!badge) return;
    badge.dataset.state = state;
    badge.textContent = text;
  }
  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + path);
    socket.onopen = () => { delay = 500; show("live", "live"); };
    socket.onmessage = (event) => onMessage(JSON.parse(event.data));
    socket.onclose = () => {
      show("reconnecting", "reconnecting…");
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    };
  }
  connect();
  return { close: () => socket && socket.close() };
};
