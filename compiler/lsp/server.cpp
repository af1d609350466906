// The protocol loop of `weft lsp`; server.h has its steps, queries.h the answers.
#include "lsp/server.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lsp/document.h"
#include "lsp/queries.h"

namespace weft::lsp {
namespace {

using Json = nlohmann::json;

// JSON-RPC's and the protocol's error codes.
enum class ErrorCode {
  ParseError = -32700,
  InvalidRequest = -32600,
  MethodNotFound = -32601,
  InvalidParams = -32602,
  InternalError = -32603,
  ServerNotInitialized = -32002,
};

struct RpcError {
  ErrorCode code;
  std::string message;
};

// ---- Framing: `Content-Length: N\r\n\r\n` and N bytes, over file descriptors ----

class Connection {
 public:
  Connection(int in, int out) : in_(in), out_(out) {}

  // The next message's body; nothing at the end of input.
  std::optional<std::string> Read() {
    while (true) {
      if (std::optional<std::string> body = Take()) return body;
      if (!Fill()) return std::nullopt;
    }
  }

  // Whether another message has arrived (or is arriving).
  bool HasPending() {
    if (Complete()) return true;
    pollfd fd{in_, POLLIN, 0};
    return poll(&fd, 1, 0) > 0;
  }

  void Write(const Json& message) {
    std::string body = message.dump(-1, ' ', false, Json::error_handler_t::replace);
    std::string data = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    std::size_t written = 0;
    while (written < data.size()) {
      ssize_t n = write(out_, data.data() + written, data.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the client has gone; the end of input follows
      written += static_cast<std::size_t>(n);
    }
  }

 private:
  // The header block's end and the body's length, when the buffer holds a whole header block.
  std::optional<std::pair<std::size_t, std::size_t>> Header() const {
    std::size_t end = buffer_.find("\r\n\r\n");
    if (end == std::string::npos) return std::nullopt;
    std::size_t length = 0;
    std::size_t line = 0;
    while (line < end) {
      std::size_t next = buffer_.find("\r\n", line);
      std::string header = buffer_.substr(line, next - line);
      std::size_t colon = header.find(':');
      if (colon != std::string::npos) {
        std::string name = header.substr(0, colon);
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (name == "content-length") length = std::strtoull(header.c_str() + colon + 1, nullptr, 10);
      }
      line = next + 2;
    }
    return std::make_pair(end + 4, length);
  }

  bool Complete() const {
    auto header = Header();
    return header && buffer_.size() >= header->first + header->second;
  }

  std::optional<std::string> Take() {
    auto header = Header();
    if (!header || buffer_.size() < header->first + header->second) return std::nullopt;
    std::string body = buffer_.substr(header->first, header->second);
    buffer_.erase(0, header->first + header->second);
    return body;
  }

  bool Fill() {
    char chunk[65536];
    while (true) {
      ssize_t n = read(in_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffer_.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
  }

  int in_, out_;
  std::string buffer_;
};

// ---- URIs ----

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A file: URI's path; another scheme's URI (an unsaved `untitled:` buffer) stands for itself.
std::string PathOf(const std::string& uri) {
  const std::string scheme = "file://";
  if (uri.rfind(scheme, 0) != 0) return uri;
  std::string rest = uri.substr(scheme.size());
  rest = rest.substr(std::min(rest.find('/'), rest.size()));  // drop an authority
  std::string path;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && HexDigit(rest[i + 1]) >= 0 && HexDigit(rest[i + 2]) >= 0) {
      path += static_cast<char>(HexDigit(rest[i + 1]) * 16 + HexDigit(rest[i + 2]));
      i += 2;
    } else {
      path += rest[i];
    }
  }
  return path;
}

std::string UriOf(const std::string& path) {
  static const char* kHex = "0123456789ABCDEF";
  std::string uri = "file://";
  for (char c : path) {
    auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      uri += c;
    } else {
      uri += '%';
      uri += kHex[byte >> 4];
      uri += kHex[byte & 15];
    }
  }
  return uri;
}

// ---- Conversions to the protocol's JSON ----

Json ToJson(Position position) {
  return {{"line", position.line}, {"character", position.character}};
}
Json ToJson(const Range& range) {
  return {{"start", ToJson(range.start)}, {"end", ToJson(range.end)}};
}

class Server {
 public:
  Server(Connection& connection, const check::CheckOptions& options) : connection_(connection), options_(options) {}

  int Run() {
    while (std::optional<std::string> body = connection_.Read()) {
      Json message = Json::parse(*body, nullptr, /*allow_exceptions=*/false);
      if (message.is_discarded() || !message.is_object()) {
        Reply(nullptr, RpcError{ErrorCode::ParseError, "the message is not a JSON object"});
      } else {
        Handle(message);
      }
      if (exit_code_) return *exit_code_;
      if (!connection_.HasPending()) PublishStale();
    }
    return shutdown_ ? 0 : 1;
  }

 private:
  void Handle(const Json& message) {
    std::string method = message.value("method", "");
    Json params = message.contains("params") ? message["params"] : Json::object();
    bool is_request = message.contains("id");
    if (!is_request) {
      try {
        Notify(method, params);
      } catch (const std::exception& error) {
        Log("weft lsp: " + method + ": " + error.what());
      }
      return;
    }
    Json id = message["id"];
    try {
      Reply(id, Request(method, params));
    } catch (const RpcError& error) {
      Reply(id, error);
    } catch (const Json::exception& error) {
      Reply(id, RpcError{ErrorCode::InvalidParams, error.what()});
    } catch (const std::exception& error) {
      Log("weft lsp: " + method + ": " + error.what());
      Reply(id, RpcError{ErrorCode::InternalError, error.what()});
    }
  }

  Json Request(const std::string& method, const Json& params) {
    if (method == "initialize") {
      initialized_ = true;
      // `{"layouts": true}`: hovers show layouts (docs/lsp.md).
      if (const auto options = params.find("initializationOptions");
          options != params.end() && options->is_object() && options->contains("layouts"))
        layouts_ = options->at("layouts").is_boolean() && options->at("layouts").get<bool>();
      return Initialize();
    }
    if (!initialized_) throw RpcError{ErrorCode::ServerNotInitialized, "the server is not initialized"};
    if (shutdown_) throw RpcError{ErrorCode::InvalidRequest, "the server is shutting down"};
    if (method == "shutdown") {
      shutdown_ = true;
      return nullptr;
    }
    if (method == "textDocument/hover") {
      auto [document, offset] = At(params);
      std::optional<HoverText> hover = Hover(document, offset, layouts_);
      if (!hover) return nullptr;
      return {{"contents", {{"kind", "markdown"}, {"value", hover->markdown}}}, {"range", ToJson(hover->range)}};
    }
    if (method == "textDocument/definition") {
      auto [document, offset] = At(params);
      std::optional<Location> location = Definition(document, offset);
      if (!location) return nullptr;
      return LocationJson(document, *location);
    }
    if (method == "textDocument/documentSymbol") {
      Document& document = Ready(params.at("textDocument").at("uri").get<std::string>());
      Json symbols = Json::array();
      for (const Symbol& symbol : Symbols(document)) {
        symbols.push_back({{"name", symbol.name},
                           {"detail", symbol.detail},
                           {"kind", static_cast<int>(symbol.kind)},
                           {"range", ToJson(symbol.range)},
                           {"selectionRange", ToJson(symbol.selection)}});
      }
      return symbols;
    }
    if (method == "textDocument/completion") {
      auto [document, offset] = At(params);
      Json items = Json::array();
      for (const CompletionItem& item : Complete(document, offset)) {
        items.push_back({{"label", item.label}, {"kind", static_cast<int>(item.kind)}, {"detail", item.detail}});
      }
      return {{"isIncomplete", false}, {"items", items}};
    }
    throw RpcError{ErrorCode::MethodNotFound, "unknown method `" + method + "`"};
  }

  Json Initialize() const {
    Json capabilities = {
        {"positionEncoding", "utf-16"},
        {"textDocumentSync", {{"openClose", true}, {"change", 1}, {"save", {{"includeText", false}}}}},
        {"hoverProvider", true},
        {"definitionProvider", true},
        {"documentSymbolProvider", true},
        {"completionProvider", {{"resolveProvider", false}}},
    };
    return {{"capabilities", capabilities}, {"serverInfo", {{"name", "weft"}, {"version", WEFT_VERSION}}}};
  }

  void Notify(const std::string& method, const Json& params) {
    if (method == "exit") {
      exit_code_ = shutdown_ ? 0 : 1;
      return;
    }
    if (!initialized_) return;  // notifications before `initialize` are dropped
    if (method == "textDocument/didOpen") {
      const Json& item = params.at("textDocument");
      std::string uri = item.at("uri").get<std::string>();
      documents_[uri] =
          std::make_unique<Document>(uri, PathOf(uri), item.at("text").get<std::string>(), item.value("version", 0));
    } else if (method == "textDocument/didChange") {
      std::string uri = params.at("textDocument").at("uri").get<std::string>();
      auto it = documents_.find(uri);
      if (it == documents_.end()) return;
      Document& document = *it->second;
      std::string text = document.text();
      for (const Json& change : params.at("contentChanges")) {
        if (change.contains("range")) {  // in case a client sends ranges anyway
          LineIndex lines(text);
          std::uint32_t begin = lines.ToOffset(PositionOf(change["range"]["start"]));
          std::uint32_t end = lines.ToOffset(PositionOf(change["range"]["end"]));
          text.replace(begin, end - begin, change.at("text").get<std::string>());
        } else {
          text = change.at("text").get<std::string>();
        }
      }
      document.Update(std::move(text), params.at("textDocument").value("version", document.version() + 1));
    } else if (method == "textDocument/didSave") {
      // Imports are read from disk: the files that may import this one are analysed again.
      std::string uri = params.at("textDocument").at("uri").get<std::string>();
      for (auto& [other, document] : documents_) {
        if (other != uri) document->Invalidate();
      }
    } else if (method == "textDocument/didClose") {
      std::string uri = params.at("textDocument").at("uri").get<std::string>();
      documents_.erase(uri);
      connection_.Write({{"jsonrpc", "2.0"},
                         {"method", "textDocument/publishDiagnostics"},
                         {"params", {{"uri", uri}, {"diagnostics", Json::array()}}}});
    }
    // initialized, $/cancelRequest, $/setTrace, workspace/didChangeConfiguration...: nothing to do.
  }

  static Position PositionOf(const Json& json) {
    return {json.at("line").get<std::uint32_t>(), json.at("character").get<std::uint32_t>()};
  }

  // The document a request names, analysed, and the offset of its position.
  std::pair<Document&, std::uint32_t> At(const Json& params) {
    Document& document = Ready(params.at("textDocument").at("uri").get<std::string>());
    return {document, document.lines().ToOffset(PositionOf(params.at("position")))};
  }

  Document& Ready(const std::string& uri) {
    auto it = documents_.find(uri);
    if (it == documents_.end()) throw RpcError{ErrorCode::InvalidParams, "the document `" + uri + "` is not open"};
    Document& document = *it->second;
    if (document.stale()) Analyse(document);
    return document;
  }

  void PublishStale() {
    for (auto& [uri, document] : documents_) {
      if (document->stale()) Analyse(*document);
    }
  }

  void Analyse(Document& document) {
    auto start = std::chrono::steady_clock::now();
    bool ran = document.Refresh(options_);
    if (trace_) {
      const Analysis& analysis = *document.current().analysis;
      auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      std::string what = !ran             ? "the same tokens, nothing checked"
                         : analysis.whole ? "checked the whole file"
                                          : "checked " + std::to_string(analysis.checked.size()) + " definitions";
      std::cerr << "weft lsp: " << document.uri() << " version " << document.version() << ": " << what << " ("
                << analysis.ast.decls().size() << " declarations) in " << ms << " ms\n";
    }
    Json diagnostics = Json::array();
    for (const PublishedDiagnostic& d : Diagnose(document)) {
      Json out = {{"range", ToJson(d.range)},
                  {"severity", static_cast<int>(d.severity)},
                  {"source", "weft"},
                  {"message", d.message}};
      if (!d.code.empty()) out["code"] = d.code;
      if (!d.related.empty()) {
        Json related = Json::array();
        for (const RelatedInformation& r : d.related)
          related.push_back({{"location", LocationJson(document, r.location)}, {"message", r.message}});
        out["relatedInformation"] = related;
      }
      diagnostics.push_back(out);
    }
    const std::string& error = document.current().analysis->internal_error;
    if (!error.empty()) Log("weft lsp: internal compiler error in " + document.uri() + ": " + error);
    connection_.Write(
        {{"jsonrpc", "2.0"},
         {"method", "textDocument/publishDiagnostics"},
         {"params", {{"uri", document.uri()}, {"version", document.version()}, {"diagnostics", diagnostics}}}});
  }

  Json LocationJson(const Document& document, const Location& location) const {
    // The document's own URI as the client spelled it; another open document's likewise.
    std::string uri = location.path == document.path() ? document.uri() : UriOf(location.path);
    for (const auto& [other, open] : documents_) {
      if (open->path() == location.path) uri = other;
    }
    return {{"uri", uri}, {"range", ToJson(location.range)}};
  }

  void Reply(const Json& id, const Json& result) {
    connection_.Write({{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
  }
  void Reply(const Json& id, const RpcError& error) {
    connection_.Write({{"jsonrpc", "2.0"},
                       {"id", id},
                       {"error", {{"code", static_cast<int>(error.code)}, {"message", error.message}}}});
  }

  void Log(const std::string& message) {
    std::cerr << message << "\n";
    connection_.Write(
        {{"jsonrpc", "2.0"}, {"method", "window/logMessage"}, {"params", {{"type", 1}, {"message", message}}}});
  }

  Connection& connection_;
  check::CheckOptions options_;
  std::map<std::string, std::unique_ptr<Document>> documents_;
  bool initialized_ = false;
  bool shutdown_ = false;
  bool layouts_ = false;  // hovers show layouts (the initialization option `layouts`)
  std::optional<int> exit_code_;
  bool trace_ = std::getenv("WEFT_LSP_TRACE") != nullptr;  // what each analysis checked, on stderr
};

}  // namespace

int RunServer(int in_fd, int out_fd, const check::CheckOptions& options) {
  Connection connection(in_fd, out_fd);
  Server server(connection, options);
  return server.Run();
}

}  // namespace weft::lsp
