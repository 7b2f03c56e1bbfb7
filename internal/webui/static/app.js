// taskq dashboard: refreshes the parts of a page marked data-poll (a URL
// answering that part's HTML, rendered and escaped by the server) every
// data-every milliseconds, without reloading the page. Nothing else: every
// page works without this script, reloaded by hand. No dependency, no
// build step.
(function () {
  'use strict';

  function poll(el) {
    var url = el.getAttribute('data-poll');
    var every = parseInt(el.getAttribute('data-every'), 10);
    if (!url || !(every > 0)) {
      return;
    }
    var busy = false;
    function refresh() {
      // A ticked checkbox (runs picked for a bulk action) holds the
      // refresh, which would untick it.
      if (busy || document.hidden || el.querySelector('input[type=checkbox]:checked')) {
        return;
      }
      busy = true;
      fetch(url, { credentials: 'same-origin', cache: 'no-store', redirect: 'error' })
        .then(function (resp) {
          if (resp.status === 401) {
            // The session ended: sign in again, then come back here.
            window.location.assign('/ui/login?next=' + encodeURIComponent(window.location.pathname + window.location.search));
            return null;
          }
          return resp.text().then(function (html) {
            return { ok: resp.ok, html: html };
          });
        })
        .then(function (r) {
          if (r === null) {
            return;
          }
          el.innerHTML = r.html;
          if (r.ok) {
            el.removeAttribute('data-stale');
          } else {
            el.setAttribute('data-stale', 'true');
          }
        })
        .catch(function () {
          el.setAttribute('data-stale', 'true');
        })
        .then(function () {
          busy = false;
        });
    }
    window.setInterval(refresh, every);
    document.addEventListener('visibilitychange', function () {
      if (!document.hidden) {
        refresh();
      }
    });
  }

  document.querySelectorAll('[data-poll]').forEach(poll);
})();
