#include "console/assets.h"

namespace phasekey::console {

std::string_view ConsoleCss() {
  return R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { background: #1d2330; color: #fff; padding: 8px 16px; display: flex; gap: 16px; align-items: center; }
header a { color: #cfe0ff; text-decoration: none; }
header .brand { font-weight: 600; color: #fff; }
header form { margin-left: auto; }
main { padding: 16px; max-width: 1200px; }
h1 { font-size: 20px; margin: 0 0 12px; }
h2 { font-size: 16px; margin: 20px 0 8px; }
table { border-collapse: collapse; background: #fff; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e3e6eb; vertical-align: top; }
th { background: #eef1f5; font-weight: 600; }
td.err, pre { white-space: pre-wrap; word-break: break-all; }
pre { background: #fff; border: 1px solid #e3e6eb; padding: 8px; margin: 0; font-size: 12px; }
.cards { display: flex; gap: 12px; flex-wrap: wrap; }
.card { background: #fff; border: 1px solid #e3e6eb; padding: 8px 14px; min-width: 120px; }
.card .n { font-size: 24px; font-weight: 600; }
.card.bad .n { color: #b3261e; }
.state-dead, .state-needs_operator { color: #b3261e; font-weight: 600; }
.state-active { color: #8a5a00; }
.state-finished { color: #1b6e3a; }
.notice { background: #e8f4ea; border: 1px solid #9ccfa8; padding: 8px; margin-bottom: 12px; }
.notice.error { background: #fbeaea; border-color: #e5a5a5; }
.filters { display: flex; gap: 8px; align-items: end; margin-bottom: 12px; flex-wrap: wrap; }
label { display: block; font-size: 12px; color: #555; }
input, select, button { font: inherit; padding: 3px 6px; }
button.danger { background: #b3261e; color: #fff; border: 0; padding: 6px 12px; }
.actions { display: flex; gap: 8px; margin: 8px 0; }
a.action { background: #b3261e; color: #fff; padding: 6px 12px; text-decoration: none; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; background: #fff; padding: 8px;
     border: 1px solid #e3e6eb; }
dt { font-weight: 600; }
dd { margin: 0; word-break: break-all; }
.graph svg { max-width: 100%; height: auto; max-height: 260px; background: #fff; border: 1px solid #e3e6eb; }
.login { max-width: 360px; margin: 60px auto; background: #fff; padding: 20px; border: 1px solid #e3e6eb; }
.login input { width: 100%; box-sizing: border-box; margin-bottom: 10px; }
)css";
}

std::string_view ConsoleJs() {
  return R"js('use strict';
(function () {
  function refresh(el) {
    fetch(el.dataset.refresh, { credentials: 'same-origin', cache: 'no-store' })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        // The fragment is the server's escaped HTML; swapping only on change
        // keeps the page still.
        if (html !== null && html !== el.dataset.last) { el.innerHTML = html; el.dataset.last = html; }
      })
      .catch(function () {});
  }
  document.querySelectorAll('[data-refresh]').forEach(function (el) {
    setInterval(function () { refresh(el); }, 3000);
  });
})();
)js";
}

}  // namespace phasekey::console
