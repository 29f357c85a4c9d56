/* Ask again every 300 ms; open the session as soon as its server answers. */
(function poll() {
  fetch(location.href, { method: "HEAD", credentials: "same-origin" })
    .then((response) => { if (response.status !== 503) location.reload(); else setTimeout(poll, 300); })
    .catch(() => setTimeout(poll, 1000));
})();
