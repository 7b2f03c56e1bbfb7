// taskq dashboard: refreshes the parts of a page marked data-poll (a URL
// answering that part's HTML, rendered and escaped by the server) every
// data-every milliseconds, without reloading the page; a refresh that
// fails keeps the last data and shows why in a banner. Nothing else: every
// page works without this script, reloaded by hand. No dependency, no
// build step.
(function () {
  'use strict';

  // The text of an error page or fragment the server answered, read
  // without running or showing its markup.
  function errorText(html) {
    var doc = new DOMParser().parseFromString(html, 'text/html');
    var el = doc.querySelector('.error') || doc.body;
    return (el && el.textContent || '').replace(/\s+/g, ' ').trim();
  }

  function poll(el) {
    var url = el.getAttribute('data-poll');
    var every = parseInt(el.getAttribute('data-every'), 10);
    if (!url || !(every > 0)) {
      return;
    }
    // A failed refresh keeps the part's last data and says so above it.
    var banner = document.createElement('p');
    banner.className = 'banner stale';
    banner.id = 'stale-banner';
    banner.setAttribute('role', 'status');
    banner.hidden = true;
    el.parentNode.insertBefore(banner, el);
    var lastOK = new Date();
    function stale(why) {
      el.setAttribute('data-stale', 'true');
      banner.textContent = 'Could not refresh: ' + why + ' Showing the data as of ' +
        lastOK.toLocaleTimeString() + '; trying again every ' + (every < 1000 ? every + ' ms.' : Math.round(every / 1000) + ' s.');
      banner.hidden = false;
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
            return { ok: resp.ok, status: resp.status, html: html };
          });
        })
        .then(function (r) {
          if (r === null) {
            return;
          }
          if (!r.ok) {
            stale((errorText(r.html) || 'the server answered ' + r.status + '.').replace(/([^.])$/, '$1.'));
            return;
          }
          el.innerHTML = r.html;
          el.removeAttribute('data-stale');
          banner.hidden = true;
          lastOK = new Date();
        })
        .catch(function () {
          stale('the server did not answer.');
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
