// Reading and writing `.npy` files (npy.h; docs/npy.md). Reading:
//
// 1. Check the magic string and the version (1.0, 2.0, 3.0); take the header length (2 bytes in
//    1.0, 4 bytes after) and check the header is all there.
// 2. Parse the header, a Python dict literal, with a small recursive-descent parser of the Python
//    literals NumPy writes (strings, True/False, integers with an optional `L`, tuples, lists),
//    bounded in depth so no input exhausts the stack.
// 3. Map 'descr' to a weft dtype (a byte-order-free or little-endian NumPy type, or weft's
//    one-field structured convention), check 'fortran_order', and compute the element count and
//    data size from 'shape' with overflow checks.
// 4. Check the data is exactly that size, then copy it, checking bool bytes are 0/1 and packing
//    i4/u4 (one element a byte in the file) two to a byte.
//
// Every failure returns one NpyError whose message starts with the file's name.
#include "weft/npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

namespace weft::runtime {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr int kMaxDepth = 16;  // nesting of the header's literals; NumPy's headers need 3

// A Python literal from the header.
struct PyValue {
  enum class Kind { Str, Bool, Int, Tuple, List, Dict };
  Kind kind = Kind::Int;
  std::string str;
  bool boolean = false;
  std::int64_t integer = 0;
  bool too_big = false;           // an integer beyond int64
  std::vector<PyValue> items;     // tuple or list elements, dict values
  std::vector<std::string> keys;  // dict keys (strings only)
};

// Parses one Python literal; `error` gets a description of the first problem.
class LiteralParser {
 public:
  explicit LiteralParser(std::string_view text) : text_(text) {}

  std::optional<PyValue> ParseAll() {
    std::optional<PyValue> v = Parse(0);
    if (!v) return std::nullopt;
    SkipSpace();
    if (pos_ != text_.size()) return Fail("unexpected `" + Snippet() + "` after the dict");
    return v;
  }

  const std::string& error() const { return error_; }

 private:
  std::optional<PyValue> Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return std::nullopt;
  }

  std::string Snippet() const {
    std::string s;
    for (std::size_t i = pos_; i < text_.size() && s.size() < 12; ++i) {
      unsigned char c = static_cast<unsigned char>(text_[i]);
      if (c == ' ' || c == '\n') break;
      if (c >= 0x20 && c < 0x7f) {
        s += static_cast<char>(c);
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        s += buf;
      }
    }
    return s;
  }

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\f' || text_[pos_] == '\v')) {
      ++pos_;
    }
  }

  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool EatWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    std::size_t end = pos_ + word.size();
    if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) return false;
    pos_ = end;
    return true;
  }

  std::optional<PyValue> Parse(int depth) {
    if (depth > kMaxDepth) return Fail("literals nested too deeply");
    SkipSpace();
    if (pos_ >= text_.size()) return Fail("unexpected end of the header");
    char c = text_[pos_];
    if (c == '\'' || c == '"') return ParseString();
    if (c == '{') return ParseDict(depth);
    if (c == '(') return ParseSequence(depth, ')', PyValue::Kind::Tuple);
    if (c == '[') return ParseSequence(depth, ']', PyValue::Kind::List);
    if (c == '-' || c == '+' || (c >= '0' && c <= '9')) return ParseInt();
    PyValue v;
    v.kind = PyValue::Kind::Bool;
    if (EatWord("True")) {
      v.boolean = true;
      return v;
    }
    if (EatWord("False")) return v;
    return Fail("unexpected `" + Snippet() + "`");
  }

  std::optional<PyValue> ParseString() {
    char quote = text_[pos_++];
    PyValue v;
    v.kind = PyValue::Kind::Str;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c == '\n') return Fail("unterminated string");
      if (c == '\\') {
        if (pos_ >= text_.size()) break;
        c = text_[pos_++];
      }
      v.str += c;
    }
    if (pos_ >= text_.size()) return Fail("unterminated string");
    ++pos_;
    return v;
  }

  std::optional<PyValue> ParseInt() {
    PyValue v;
    v.kind = PyValue::Kind::Int;
    bool negative = false;
    if (text_[pos_] == '-' || text_[pos_] == '+') negative = text_[pos_++] == '-';
    SkipSpace();
    std::size_t start = pos_;
    std::uint64_t magnitude = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      unsigned digit = static_cast<unsigned>(text_[pos_] - '0');
      if (magnitude > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
        v.too_big = true;
      } else {
        magnitude = magnitude * 10 + digit;
      }
      ++pos_;
    }
    if (pos_ == start) return Fail("expected digits after the sign");
    if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;
    if (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.')) {
      return Fail("malformed integer `" + std::string(text_.substr(start, pos_ - start + 1)) + "`");
    }
    constexpr std::uint64_t kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (v.too_big || magnitude > kMax + (negative ? 1 : 0)) {
      v.too_big = true;
      v.integer = negative ? -1 : 1;  // keeps the sign for messages
    } else {
      v.integer = negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
    }
    return v;
  }

  // `(a, b)`, `(a,)`, `()`, `[a, b,]`. A parenthesized single value without a comma is that value.
  std::optional<PyValue> ParseSequence(int depth, char close, PyValue::Kind kind) {
    ++pos_;
    PyValue v;
    v.kind = kind;
    bool saw_comma = false;
    while (!Eat(close)) {
      if (pos_ >= text_.size()) return Fail("unexpected end of the header");
      std::optional<PyValue> item = Parse(depth + 1);
      if (!item) return std::nullopt;
      v.items.push_back(std::move(*item));
      if (Eat(',')) {
        saw_comma = true;
        continue;
      }
      if (!Eat(close)) return Fail(std::string("expected `,` or `") + close + "`, found `" + Snippet() + "`");
      break;
    }
    if (kind == PyValue::Kind::Tuple && v.items.size() == 1 && !saw_comma) return std::move(v.items[0]);
    return v;
  }

  std::optional<PyValue> ParseDict(int depth) {
    ++pos_;
    PyValue v;
    v.kind = PyValue::Kind::Dict;
    while (!Eat('}')) {
      SkipSpace();
      if (pos_ >= text_.size()) return Fail("unexpected end of the header");
      if (text_[pos_] != '\'' && text_[pos_] != '"') return Fail("expected a string key, found `" + Snippet() + "`");
      std::optional<PyValue> key = ParseString();
      if (!key) return std::nullopt;
      if (!Eat(':')) return Fail("expected `:` after '" + key->str + "'");
      std::optional<PyValue> value = Parse(depth + 1);
      if (!value) return std::nullopt;
      for (const std::string& k : v.keys) {
        if (k == key->str) return Fail("key '" + k + "' appears twice");
      }
      v.keys.push_back(key->str);
      v.items.push_back(std::move(*value));
      if (Eat(',')) continue;
      if (!Eat('}')) return Fail("expected `,` or `}`, found `" + Snippet() + "`");
      break;
    }
    return v;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::string error_;
};

// How a weft dtype is stored in a file: its descr and the bytes per element there.
struct FileType {
  Dtype dtype;
  int file_bytes;
};

std::string Quote(std::string_view s) {
  return "`" + std::string(s) + "`";
}

// Maps a simple descr (`<f4`, `|b1`, ...) to a dtype; `error` says why not. Byte-order-free and
// little-endian only; `=` (native) counts as little-endian, as every machine weft runs on is.
std::optional<FileType> SimpleType(const std::string& descr, std::string& error) {
  std::string_view d = descr;
  char order = '=';
  if (!d.empty() && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) {
    order = d[0];
    d.remove_prefix(1);
  }
  if (d == "O" || d == "O8" || d == "O4") {
    error = "object arrays (descr " + Quote(descr) + ") are not supported";
    return std::nullopt;
  }
  struct Entry {
    std::string_view code;
    Dtype dtype;
    int bytes;
  };
  static constexpr Entry kTable[] = {
      {"b1", Dtype::Bool, 1}, {"?", Dtype::Bool, 1},  {"i1", Dtype::I8, 1},  {"i2", Dtype::I16, 2},
      {"i4", Dtype::I32, 4},  {"i8", Dtype::I64, 8},  {"u1", Dtype::U8, 1},  {"u2", Dtype::U16, 2},
      {"u4", Dtype::U32, 4},  {"u8", Dtype::U64, 8},  {"f2", Dtype::F16, 2}, {"f4", Dtype::F32, 4},
      {"f8", Dtype::F64, 8},  {"V2", Dtype::BF16, 2},
  };
  for (const Entry& e : kTable) {
    if (d != e.code) continue;
    if (order == '>' && e.bytes > 1 && e.dtype != Dtype::BF16) {
      error = "big-endian data (descr " + Quote(descr) +
              ") is not supported; convert with arr.astype(arr.dtype.newbyteorder('<'))";
      return std::nullopt;
    }
    if (e.dtype == Dtype::BF16 && order == '>') break;  // not what ml_dtypes writes
    return FileType{e.dtype, e.bytes};
  }
  error = "unsupported dtype " + Quote(descr) +
          " (weft reads bool, int8-64, uint8-64, float16/32/64, and the structured types of docs/npy.md)";
  return std::nullopt;
}

// The one-field structured types of docs/npy.md: the field's name, its dtype and the base descr.
struct StructuredType {
  std::string_view field;
  Dtype dtype;
  std::string_view base;  // as written by EncodeNpy
};
constexpr StructuredType kStructured[] = {
    {"bf16", Dtype::BF16, "<u2"}, {"f8e4m3", Dtype::F8E4M3, "|u1"}, {"f8e5m2", Dtype::F8E5M2, "|u1"},
    {"i4", Dtype::I4, "|i1"},     {"u4", Dtype::U4, "|u1"},
};

std::optional<FileType> DescrType(const PyValue& descr, std::string& error) {
  if (descr.kind == PyValue::Kind::Str) return SimpleType(descr.str, error);
  const char* convention = "structured dtypes other than weft's one-field types (docs/npy.md) are not supported";
  if (descr.kind != PyValue::Kind::List) {
    error = "'descr' must be a string or a list of fields";
    return std::nullopt;
  }
  if (descr.items.size() != 1 || descr.items[0].kind != PyValue::Kind::Tuple || descr.items[0].items.size() != 2 ||
      descr.items[0].items[0].kind != PyValue::Kind::Str || descr.items[0].items[1].kind != PyValue::Kind::Str) {
    error = convention;
    return std::nullopt;
  }
  const std::string& name = descr.items[0].items[0].str;
  const std::string& base = descr.items[0].items[1].str;
  for (const StructuredType& s : kStructured) {
    if (name != s.field) continue;
    std::string base_error;
    std::optional<FileType> base_type = SimpleType(base, base_error);
    std::optional<FileType> expected = SimpleType(std::string(s.base), base_error);
    if (!base_type && base_error.find("big-endian") != std::string::npos) {
      error = base_error;
      return std::nullopt;
    }
    if (!base_type || base_type->dtype != expected->dtype) {
      error = "field '" + name + "' must have type '" + std::string(s.base) + "', found " + Quote(base);
      return std::nullopt;
    }
    return FileType{s.dtype, expected->file_bytes};
  }
  error = std::string(convention) + "; found a field named '" + name + "'";
  return std::nullopt;
}

std::string Descr(Dtype dtype) {
  for (const StructuredType& s : kStructured) {
    if (s.dtype == dtype) return "[('" + std::string(s.field) + "', '" + std::string(s.base) + "')]";
  }
  switch (dtype) {
    case Dtype::Bool:
      return "'|b1'";
    case Dtype::I8:
      return "'|i1'";
    case Dtype::I16:
      return "'<i2'";
    case Dtype::I32:
      return "'<i4'";
    case Dtype::I64:
      return "'<i8'";
    case Dtype::U8:
      return "'|u1'";
    case Dtype::U16:
      return "'<u2'";
    case Dtype::U32:
      return "'<u4'";
    case Dtype::U64:
      return "'<u8'";
    case Dtype::F16:
      return "'<f2'";
    case Dtype::F32:
      return "'<f4'";
    case Dtype::F64:
      return "'<f8'";
    default:
      return "?";  // the structured ones, handled above
  }
}

std::uint64_t ReadLittle(std::string_view bytes, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

bool IsPacked(Dtype d) {
  return d == Dtype::I4 || d == Dtype::U4;
}

}  // namespace

Result<HostTensor, NpyError> ReadNpyBytes(std::string_view bytes, const std::string& name) {
  auto fail = [&](const std::string& message) { return NpyError{name + ": " + message}; };

  // 1. Magic, version, header length.
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic) {
    return fail("not a .npy file (it does not start with the magic string \\x93NUMPY)");
  }
  if (bytes.size() < 8) return fail("truncated header: the file ends inside the format version");
  int major = static_cast<unsigned char>(bytes[6]);
  int minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return fail("unknown .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                " (weft reads 1.0, 2.0 and 3.0)");
  }
  int length_bytes = major == 1 ? 2 : 4;
  std::size_t prefix = 8 + static_cast<std::size_t>(length_bytes);
  if (bytes.size() < prefix) return fail("truncated header: the file ends inside the header length");
  std::uint64_t header_length = ReadLittle(bytes, 8, length_bytes);
  if (header_length > bytes.size() - prefix) {
    return fail("truncated header: it should be " + std::to_string(header_length) + " bytes, the file has " +
                std::to_string(bytes.size() - prefix) + " after the prefix");
  }
  std::string_view header = bytes.substr(prefix, static_cast<std::size_t>(header_length));
  std::string_view data = bytes.substr(prefix + static_cast<std::size_t>(header_length));

  // 2. The header dict.
  LiteralParser parser(header);
  std::optional<PyValue> dict = parser.ParseAll();
  if (!dict) return fail("malformed header: " + parser.error());
  if (dict->kind != PyValue::Kind::Dict) return fail("malformed header: it is not a dict");
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (std::size_t i = 0; i < dict->keys.size(); ++i) {
    const std::string& key = dict->keys[i];
    if (key == "descr") {
      descr = &dict->items[i];
    } else if (key == "fortran_order") {
      fortran = &dict->items[i];
    } else if (key == "shape") {
      shape = &dict->items[i];
    } else {
      return fail("malformed header: unexpected key '" + key + "'");
    }
  }
  if (!descr || !fortran || !shape) {
    std::string missing = !descr ? "descr" : !fortran ? "fortran_order" : "shape";
    return fail("malformed header: the key '" + missing + "' is missing");
  }

  // 3. Dtype, order, shape.
  std::string descr_error;
  std::optional<FileType> type = DescrType(*descr, descr_error);
  if (!type) return fail(descr_error);
  if (fortran->kind != PyValue::Kind::Bool) return fail("malformed header: 'fortran_order' must be True or False");
  if (shape->kind != PyValue::Kind::Tuple) return fail("malformed header: 'shape' must be a tuple of integers");
  HostTensor tensor;
  tensor.dtype = type->dtype;
  std::int64_t count = 1;
  bool overflow = false;
  int non_unit_dims = 0;
  for (const PyValue& dim : shape->items) {
    if (dim.kind != PyValue::Kind::Int) return fail("malformed header: 'shape' must be a tuple of integers");
    if (dim.too_big) return fail("a dimension in 'shape' does not fit in 64 bits, so the element count overflows");
    tensor.shape.push_back(dim.integer);
    if (dim.integer > 1) ++non_unit_dims;
  }
  for (std::int64_t d : tensor.shape) {
    if (d < 0) return fail("negative dimension in shape " + ShapeText(tensor.shape));
  }
  for (std::int64_t d : tensor.shape) {
    if (d != 0 && count > std::numeric_limits<std::int64_t>::max() / d) overflow = true;
    count = overflow ? 0 : count * d;
  }
  // Overflow anywhere in the running product counts, even with a zero dim later: code that
  // multiplies the dims in order (HostTensor::Count) must not overflow.
  if (overflow) return fail("the element count of shape " + ShapeText(tensor.shape) + " overflows");
  if (count > std::numeric_limits<std::int64_t>::max() / type->file_bytes) {
    return fail("the data size of shape " + ShapeText(tensor.shape) + " overflows");
  }
  // A Fortran-order array with at most one dimension above 1 has the same bytes as in C order.
  if (fortran->boolean && non_unit_dims > 1) {
    return fail("Fortran-order arrays are not supported; save with numpy.ascontiguousarray");
  }

  // 4. The data.
  std::uint64_t expected = static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(type->file_bytes);
  if (data.size() < expected) {
    return fail("truncated data: shape " + ShapeText(tensor.shape) + " needs " + std::to_string(expected) +
                " bytes, the file has " + std::to_string(data.size()));
  }
  if (data.size() > expected) {
    return fail(std::to_string(data.size() - expected) + " extra bytes after the data (shape " +
                ShapeText(tensor.shape) + " needs " + std::to_string(expected) + ")");
  }
  if (IsPacked(tensor.dtype)) {
    bool is_signed = tensor.dtype == Dtype::I4;
    tensor.bytes.assign(static_cast<std::size_t>(ByteSize(tensor.dtype, count)), 0);
    for (std::int64_t i = 0; i < count; ++i) {
      unsigned char byte = static_cast<unsigned char>(data[static_cast<std::size_t>(i)]);
      int value = is_signed ? static_cast<int>(static_cast<signed char>(byte)) : byte;
      if (is_signed ? (value < -8 || value > 7) : value > 15) {
        return fail("element " + std::to_string(i) + " is " + std::to_string(value) + ", outside the range of " +
                    std::string(Spelling(tensor.dtype)) + (is_signed ? " (-8..7)" : " (0..15)"));
      }
      std::uint8_t nibble = static_cast<std::uint8_t>(value & 0xf);
      tensor.bytes[static_cast<std::size_t>(i / 2)] |= static_cast<std::uint8_t>(i % 2 ? nibble << 4 : nibble);
    }
    return tensor;
  }
  if (tensor.dtype == Dtype::Bool) {
    for (std::size_t i = 0; i < data.size(); ++i) {
      unsigned char byte = static_cast<unsigned char>(data[i]);
      if (byte > 1) {
        return fail("element " + std::to_string(i) + " of a bool array is the byte " + std::to_string(byte) +
                    ", not 0 or 1");
      }
    }
  }
  tensor.bytes.assign(data.begin(), data.end());
  return tensor;
}

Result<HostTensor, NpyError> ReadNpy(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return NpyError{path + ": cannot open: " + std::strerror(errno)};
  std::string bytes;
  char buffer[1 << 16];
  int read_errno = 0;
  for (;;) {
    std::size_t n = std::fread(buffer, 1, sizeof buffer, file);
    bytes.append(buffer, n);
    if (n < sizeof buffer) {
      if (std::ferror(file)) read_errno = errno ? errno : EIO;
      break;
    }
  }
  std::fclose(file);
  if (read_errno) return NpyError{path + ": cannot read: " + std::strerror(read_errno)};
  return ReadNpyBytes(bytes, path);
}

Result<std::string, NpyError> EncodeNpy(const HostTensor& tensor, const std::string& name) {
  std::int64_t count = 1;
  for (std::int64_t d : tensor.shape) {
    if (d < 0) return NpyError{name + ": cannot write a tensor of shape " + ShapeText(tensor.shape)};
    if (d != 0 && count > std::numeric_limits<std::int64_t>::max() / d) {
      return NpyError{name + ": the element count of shape " + ShapeText(tensor.shape) + " overflows"};
    }
    count *= d;
  }
  if (static_cast<std::int64_t>(tensor.bytes.size()) != ByteSize(tensor.dtype, count)) {
    return NpyError{name + ": the tensor has " + std::to_string(tensor.bytes.size()) + " bytes, its dtype " +
                    std::string(Spelling(tensor.dtype)) + " and shape " + ShapeText(tensor.shape) + " need " +
                    std::to_string(ByteSize(tensor.dtype, count))};
  }
  std::string shape_text = "(";
  for (std::size_t i = 0; i < tensor.shape.size(); ++i) {
    shape_text += std::to_string(tensor.shape[i]);
    shape_text += tensor.shape.size() == 1 ? "," : i + 1 < tensor.shape.size() ? ", " : "";
  }
  shape_text += ")";
  std::string header = "{'descr': " + Descr(tensor.dtype) + ", 'fortran_order': False, 'shape': " + shape_text + ", }";
  // Pad with spaces and a final newline so the data starts at a multiple of 64 bytes (NumPy's
  // alignment); version 2.0 only when the header does not fit a 2-byte length.
  int major = header.size() + 1 + 10 > 65535 ? 2 : 1;
  std::size_t prefix = major == 1 ? 10 : 12;
  std::size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::string out(kMagic);
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header;
  if (IsPacked(tensor.dtype)) {
    bool is_signed = tensor.dtype == Dtype::I4;
    for (std::int64_t i = 0; i < count; ++i) {
      int nibble = (tensor.bytes[static_cast<std::size_t>(i / 2)] >> (i % 2 ? 4 : 0)) & 0xf;
      int value = is_signed && nibble >= 8 ? nibble - 16 : nibble;
      out += static_cast<char>(static_cast<unsigned char>(value & 0xff));
    }
  } else {
    out.append(reinterpret_cast<const char*>(tensor.bytes.data()), tensor.bytes.size());
  }
  return out;
}

Result<std::monostate, NpyError> WriteNpy(const std::string& path, const HostTensor& tensor) {
  Result<std::string, NpyError> bytes = EncodeNpy(tensor, path);
  if (!bytes) return bytes.error();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) return NpyError{path + ": cannot write: " + std::strerror(errno)};
  bool ok = std::fwrite(bytes->data(), 1, bytes->size(), file) == bytes->size();
  int write_errno = ok ? 0 : errno;
  if (std::fclose(file) != 0 && ok) {
    ok = false;
    write_errno = errno;
  }
  if (!ok) return NpyError{path + ": cannot write: " + std::strerror(write_errno ? write_errno : EIO)};
  return std::monostate{};
}

}  // namespace weft::runtime
