// render_doc_results SOURCE_DIR: rewrites the generated sections of the
// docs (doc_results.h) from the result files in SOURCE_DIR/docs/results.
// Exit status 0 when done, 1 with a one-line reason on stderr otherwise.
#include <cstdio>
#include <exception>

#include "doc_results.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: render_doc_results SOURCE_DIR\n");
    return 2;
  }
  try {
    phasekey::doc_results::RenderDocs(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "render_doc_results: %s\n", e.what());
    return 1;
  }
  return 0;
}
