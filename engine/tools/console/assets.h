// The console's stylesheet and script, compiled into the binary (no build
// step, nothing fetched from elsewhere). Served as /static/console.css and
// /static/console.js; the pages carry no inline script or style, so the
// Content-Security-Policy can forbid both.
#ifndef PHASEKEY_TOOLS_SRC_CONSOLE_ASSETS_H_
#define PHASEKEY_TOOLS_SRC_CONSOLE_ASSETS_H_

#include <string_view>

namespace phasekey::console {

std::string_view ConsoleCss();
// Live refresh: an element with data-refresh="<url>" has its content
// replaced every few seconds by the HTML fragment at that URL (same origin,
// the session's cookie), only when it changed, so the page does not flicker.
std::string_view ConsoleJs();

}  // namespace phasekey::console

#endif  // PHASEKEY_TOOLS_SRC_CONSOLE_ASSETS_H_
