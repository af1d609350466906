// `weft lsp`: a Language Server Protocol server over standard input and output (docs/lsp.md).
//
// The protocol loop, in steps:
//  1. Read one message: headers up to an empty line, then Content-Length bytes of JSON-RPC.
//  2. Handle it: requests (initialize, shutdown, hover, definition, documentSymbol, completion)
//     are answered at once; notifications (didOpen, didChange, didSave, didClose, exit) update
//     the documents, and a change only marks its document stale (document.h).
//  3. When no further message is waiting, analyse each stale document and publish its diagnostics.
//     A request on a stale document analyses it first, so an answer always reflects every edit
//     received before it, and edits typed in a burst are analysed once.
// All of the compiler's work happens on this one thread (parsing and checking run on their own
// deep stack, base/stack.h); an internal compiler error becomes a diagnostic and a log message,
// never the end of the server.
#pragma once

#include "check/check.h"

namespace weft::lsp {

// Serves until the `exit` notification or the end of input. Returns the exit status the protocol
// asks for: 0 after `shutdown` then `exit`, 1 otherwise.
int RunServer(int in_fd, int out_fd, const check::CheckOptions& options);

}  // namespace weft::lsp
