// .npy reading and writing (runtime/include/weft/npy.h): NumPy writes files that ReadNpy must read
// bit for bit, NumPy reads what WriteNpy writes, every malformed file gives its one error naming
// the file, and no truncation or corruption of a valid file crashes the reader.
#include "weft/npy.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <sstream>

#include "test_python.h"

namespace weft::runtime {
namespace {

using testing::MakeTempDir;
using testing::ReadFile;
using testing::RunNumpy;
using testing::WriteFile;

std::string Hex(const std::vector<std::uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::uint8_t b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

// A .npy file with this header text (padded as NumPy pads it) and data, in format `major`.0.
std::string NpyFile(const std::string& header, const std::string& data, int major = 1) {
  std::size_t prefix = major == 1 ? 10 : 12;
  std::string h = header;
  while ((prefix + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return out + h + data;
}

std::string Header(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

// The error of reading `bytes` as file `name`; fails the test if it reads.
std::string ErrorOf(const std::string& bytes, const std::string& name = "a.npy") {
  auto result = ReadNpyBytes(bytes, name);
  if (result.ok()) FAIL("expected an error, read a " << Spelling(result->dtype) << ShapeText(result->shape));
  return result.error().message;
}

HostTensor Tensor(Dtype dtype, std::vector<std::int64_t> shape, std::vector<std::uint8_t> bytes) {
  return HostTensor{dtype, std::move(shape), std::move(bytes)};
}

// Packs 4-bit values two to a byte, element 2k in the low nibble (tensor.h), for expected tensors.
std::vector<std::uint8_t> PackNibbles(const std::vector<int>& values) {
  std::vector<std::uint8_t> out((values.size() + 1) / 2, 0);
  for (std::size_t i = 0; i < values.size(); ++i)
    out[i / 2] |= static_cast<std::uint8_t>((values[i] & 15) << (4 * (i % 2)));
  return out;
}

TEST_CASE("ReadNpy reads what numpy.save writes for every supported descr and format version") {
  std::string dir = MakeTempDir();
  std::string manifest = RunNumpy(R"PY(
import sys, numpy as np, numpy.lib.format as fmt
d = sys.argv[1]
def emit(name, arr, weft, raw=None, version=None):
    path = f"{d}/{name}.npy"
    if version is None:
        np.save(path, arr)
    else:
        with open(path, "wb") as f:
            fmt.write_array(f, arr, version=version)
    if raw is None:
        raw = np.ascontiguousarray(arr).tobytes()
    print(name, weft, ",".join(map(str, arr.shape)) or "-", raw.hex() or "-")
rng = np.random.default_rng(1)
emit("f32", rng.standard_normal((3, 4)).astype(np.float32), "f32")
emit("f64", np.array([1.5, -2.25, np.inf, np.nan, -0.0]), "f64")
emit("f16", (np.arange(6, dtype=np.float16) / np.float16(3)).reshape(2, 3), "f16")
emit("bool", np.array([[True, False], [False, True]]), "bool")
for t, w in [(np.int8, "i8"), (np.int16, "i16"), (np.int32, "i32"), (np.int64, "i64"),
             (np.uint8, "u8"), (np.uint16, "u16"), (np.uint32, "u32"), (np.uint64, "u64")]:
    info = np.iinfo(t)
    emit(w, np.array([[info.min, 1], [0, info.max]], dtype=t), w)
emit("scalar", np.array(3.5, dtype=np.float32), "f32")
emit("empty", np.zeros((0, 3), dtype=np.int32), "i32")
emit("zero_in_middle", np.zeros((2, 0, 5), dtype=np.float64), "f64")
emit("v2", np.arange(5, dtype=np.int16), "i16", version=(2, 0))
emit("v3", np.arange(5, dtype=np.uint8).reshape(5, 1), "u8", version=(3, 0))
emit("fortran_vector", np.asfortranarray(np.arange(4.0)), "f64")
bits = np.array([0x3F80, 0xC000, 0x7F80, 0x0001], dtype=np.uint16)
emit("bf16", bits.view([("bf16", "<u2")]), "bf16", raw=bits.tobytes())
emit("bf16_void", bits.view("V2"), "bf16", raw=bits.tobytes())
b8 = np.array([0x38, 0xB8, 0x7E, 0x7F, 0x01, 0x00], dtype=np.uint8).reshape(2, 3)
emit("f8e4m3", b8.view([("f8e4m3", "|u1")]).reshape(2, 3), "f8e4m3", raw=b8.tobytes())
emit("f8e5m2", b8.view([("f8e5m2", "|u1")]).reshape(2, 3), "f8e5m2", raw=b8.tobytes())
def packed(v):
    n = (v.astype(np.int64) & 15).astype(np.uint8)
    if len(n) % 2:
        n = np.append(n, np.uint8(0))
    return (n[0::2] | (n[1::2] << 4)).astype(np.uint8).tobytes()
i4 = np.array([-8, 7, 0, -1, 3, -5], dtype=np.int8)
emit("i4", i4.view([("i4", "|i1")]).reshape(2, 3), "i4", raw=packed(i4))
u4 = np.array([0, 15, 9, 1, 7], dtype=np.uint8)
emit("u4", u4.view([("u4", "|u1")]), "u4", raw=packed(u4))
)PY",
                                  "'" + dir + "'");
  std::istringstream lines(manifest);
  std::string name, dtype, shape, hex;
  int files = 0;
  while (lines >> name >> dtype >> shape >> hex) {
    ++files;
    INFO("file " << name);
    auto tensor = ReadNpy(dir + "/" + name + ".npy");
    REQUIRE(tensor.ok());
    CHECK(Spelling(tensor->dtype) == dtype);
    std::string shape_text;
    for (std::int64_t d : tensor->shape) shape_text += (shape_text.empty() ? "" : ",") + std::to_string(d);
    CHECK((shape_text.empty() ? "-" : shape_text) == shape);
    CHECK((tensor->bytes.empty() ? "-" : Hex(tensor->bytes)) == hex);
    CHECK(static_cast<std::int64_t>(tensor->bytes.size()) == ByteSize(tensor->dtype, tensor->Count()));
    std::remove((dir + "/" + name + ".npy").c_str());
  }
  CHECK(files == 24);
  std::remove(dir.c_str());
}

TEST_CASE("numpy.load reads what WriteNpy writes with the same values") {
  std::string dir = MakeTempDir();
  struct Case {
    std::string name;
    HostTensor tensor;
    std::string descr;     // what numpy's dtype.descr must print
    std::string expected;  // hex of the values numpy sees (one byte per element for i4/u4)
  };
  std::vector<Case> cases = {
      {"f32", Tensor(Dtype::F32, {2, 2}, {0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0, 0, 0xc0, 0x7f, 1, 0, 0, 0}),
       "[('', '<f4')]", "0000803f000000c00000c07f01000000"},
      {"f64", Tensor(Dtype::F64, {1}, {0, 0, 0, 0, 0, 0, 0xf0, 0x3f}), "[('', '<f8')]", "000000000000f03f"},
      {"f16", Tensor(Dtype::F16, {3}, {0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b}), "[('', '<f2')]", "003c00c0ff7b"},
      {"bool", Tensor(Dtype::Bool, {2, 1}, {1, 0}), "[('', '|b1')]", "0100"},
      {"i8", Tensor(Dtype::I8, {2}, {0x80, 0x7f}), "[('', '|i1')]", "807f"},
      {"i16", Tensor(Dtype::I16, {1}, {0x34, 0x12}), "[('', '<i2')]", "3412"},
      {"i32", Tensor(Dtype::I32, {1}, {1, 2, 3, 0x84}), "[('', '<i4')]", "01020384"},
      {"i64", Tensor(Dtype::I64, {1}, {1, 2, 3, 4, 5, 6, 7, 0x88}), "[('', '<i8')]", "0102030405060788"},
      {"u8", Tensor(Dtype::U8, {3}, {0, 1, 255}), "[('', '|u1')]", "0001ff"},
      {"u16", Tensor(Dtype::U16, {1}, {0xff, 0xfe}), "[('', '<u2')]", "fffe"},
      {"u32", Tensor(Dtype::U32, {1}, {0xff, 0xfe, 0xfd, 0xfc}), "[('', '<u4')]", "fffefdfc"},
      {"u64", Tensor(Dtype::U64, {1}, {1, 0, 0, 0, 0, 0, 0, 0xff}), "[('', '<u8')]", "01000000000000ff"},
      {"scalar", Tensor(Dtype::I32, {}, {7, 0, 0, 0}), "[('', '<i4')]", "07000000"},
      {"empty", Tensor(Dtype::F32, {0, 4}, {}), "[('', '<f4')]", "-"},
      {"bf16", Tensor(Dtype::BF16, {2}, {0x80, 0x3f, 0x00, 0xc0}), "[('bf16', '<u2')]", "803f00c0"},
      {"f8e4m3", Tensor(Dtype::F8E4M3, {2}, {0x38, 0xfe}), "[('f8e4m3', '|u1')]", "38fe"},
      {"f8e5m2", Tensor(Dtype::F8E5M2, {1, 2}, {0x3c, 0x7c}), "[('f8e5m2', '|u1')]", "3c7c"},
      {"i4", Tensor(Dtype::I4, {2, 2}, PackNibbles({-8, 7, -1, 0})), "[('i4', '|i1')]", "f807ff00"},
      {"u4", Tensor(Dtype::U4, {3}, PackNibbles({15, 0, 9})), "[('u4', '|u1')]", "0f0009"},
  };
  for (const Case& c : cases) {
    auto written = WriteNpy(dir + "/" + c.name + ".npy", c.tensor);
    REQUIRE(written.ok());
  }
  std::string out = RunNumpy(R"PY(
import sys, numpy as np
d = sys.argv[1]
for name in sys.argv[2:]:
    a = np.load(f"{d}/{name}.npy")
    values = a[a.dtype.names[0]] if a.dtype.names else a
    print(name, str(a.dtype.descr).replace(" ", ""), ",".join(map(str, a.shape)) or "-",
          values.tobytes().hex() or "-")
)PY",
                             "'" + dir + "'" + [&] {
                               std::string names;
                               for (const Case& c : cases) names += " " + c.name;
                               return names;
                             }());
  std::istringstream lines(out);
  for (const Case& c : cases) {
    INFO("file " << c.name);
    std::string name, descr, shape, hex;
    REQUIRE(lines >> name >> descr >> shape >> hex);
    CHECK(name == c.name);
    std::string want_descr = c.descr;
    want_descr.erase(std::remove(want_descr.begin(), want_descr.end(), ' '), want_descr.end());
    CHECK(descr == want_descr);
    std::string shape_text;
    for (std::int64_t d : c.tensor.shape) shape_text += (shape_text.empty() ? "" : ",") + std::to_string(d);
    CHECK(shape == (shape_text.empty() ? "-" : shape_text));
    CHECK(hex == c.expected);
    std::remove((dir + "/" + c.name + ".npy").c_str());
  }
  std::remove(dir.c_str());
}

TEST_CASE("WriteNpy then ReadNpy gives back the tensor for every dtype") {
  for (int d = 0; d <= static_cast<int>(Dtype::F64); ++d) {
    Dtype dtype = static_cast<Dtype>(d);
    INFO("dtype " << Spelling(dtype));
    HostTensor t = HostTensor::Zeros(dtype, {3, 4});
    for (std::size_t i = 0; i < t.bytes.size(); ++i) t.bytes[i] = static_cast<std::uint8_t>(i * 37 + 5);
    if (dtype == Dtype::Bool) {
      for (auto& b : t.bytes) b &= 1;
    }
    auto bytes = EncodeNpy(t, "t.npy");
    REQUIRE(bytes.ok());
    std::size_t data_bytes = dtype == Dtype::I4 || dtype == Dtype::U4 ? 12 : t.bytes.size();
    CHECK((bytes->size() - data_bytes) % 64 == 0);
    auto back = ReadNpyBytes(*bytes, "t.npy");
    REQUIRE(back.ok());
    CHECK(back->dtype == dtype);
    CHECK(back->shape == t.shape);
    CHECK(back->bytes == t.bytes);
  }
}

TEST_CASE("WriteNpy uses format 2.0 when the header outgrows 64 KiB and ReadNpy reads it") {
  HostTensor t = HostTensor::Zeros(Dtype::U8, std::vector<std::int64_t>(30000, 1));
  t.bytes[0] = 42;
  auto bytes = EncodeNpy(t, "big.npy");
  REQUIRE(bytes.ok());
  CHECK((*bytes)[6] == 2);
  CHECK((bytes->size() - 1) % 64 == 0);  // the data (1 byte) starts at a multiple of 64
  auto back = ReadNpyBytes(*bytes, "big.npy");
  REQUIRE(back.ok());
  CHECK(back->shape.size() == 30000);
  CHECK(back->bytes == std::vector<std::uint8_t>{42});
}

TEST_CASE("The header dict may have its keys in any order and Python's spellings") {
  std::string data(12, '\0');
  data[0] = 1;
  for (std::string header : {
           std::string("{'shape': (3,), 'fortran_order': False, 'descr': '<f4'}"),
           std::string("{ \"descr\" :'<f4' ,\t'fortran_order':False,'shape':(3L,),}"),
           std::string("{'descr': '<f4',\n 'fortran_order': False,\n 'shape': (3, ), }"),
           std::string("{'descr':'=f4','fortran_order':False,'shape':(3l,)}"),
           std::string("{'descr':'|f4','fortran_order':False,'shape':(\n3\n,\n)}"),
       }) {
    INFO(header);
    auto t = ReadNpyBytes(NpyFile(header, data), "a.npy");
    REQUIRE(t.ok());
    CHECK(t->dtype == Dtype::F32);
    CHECK(t->shape == std::vector<std::int64_t>{3});
    CHECK(t->bytes[0] == 1);
  }
  auto scalar = ReadNpyBytes(NpyFile(Header("'<i8'", "()"), std::string(8, '\x02')), "s.npy");
  REQUIRE(scalar.ok());
  CHECK(scalar->shape.empty());
  auto matrix = ReadNpyBytes(NpyFile(Header("'|u1'", "(2, 3L)"), "abcdef", 3), "m.npy");
  REQUIRE(matrix.ok());
  CHECK(matrix->shape == std::vector<std::int64_t>{2, 3});
  auto void_bf16 = ReadNpyBytes(NpyFile(Header("'<V2'", "(1,)"), "\x80\x3f"), "v.npy");
  REQUIRE(void_bf16.ok());
  CHECK(void_bf16->dtype == Dtype::BF16);
}

TEST_CASE("Each malformed file gives one error naming the file") {
  std::string f4 = std::string(12, '\0');
  struct Case {
    std::string bytes;
    std::string message;
  };
  std::string good_header = Header("'<f4'", "(3,)");
  std::string v1 = NpyFile(good_header, f4);
  std::string long_length = v1.substr(0, 8) + std::string("\xff\x00", 2) + v1.substr(10, 30);
  std::vector<Case> cases = {
      {"", "a.npy: not a .npy file (it does not start with the magic string \\x93NUMPY)"},
      {"PK\x03\x04 a zip file", "a.npy: not a .npy file (it does not start with the magic string \\x93NUMPY)"},
      {std::string("\x93NUMPY\x04\x00", 8) + "xx",
       "a.npy: unknown .npy format version 4.0 (weft reads 1.0, 2.0 and 3.0)"},
      {std::string("\x93NUMPY\x01\x01", 8) + "xx",
       "a.npy: unknown .npy format version 1.1 (weft reads 1.0, 2.0 and 3.0)"},
      {std::string("\x93NUMPY\x01", 7), "a.npy: truncated header: the file ends inside the format version"},
      {std::string("\x93NUMPY\x02\x00\x10", 9), "a.npy: truncated header: the file ends inside the header length"},
      {long_length, "a.npy: truncated header: it should be 255 bytes, the file has 30 after the prefix"},
      {NpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (3,}", f4),
       "a.npy: malformed header: unexpected `}`"},
      {NpyFile("{'descr': '<f4', 'fortran_order': False}", f4), "a.npy: malformed header: the key 'shape' is missing"},
      {NpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", f4),
       "a.npy: malformed header: unexpected key 'x'"},
      {NpyFile("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", f4),
       "a.npy: malformed header: key 'descr' appears twice"},
      {NpyFile("{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}", f4),
       "a.npy: malformed header: 'fortran_order' must be True or False"},
      {NpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': 3}", f4),
       "a.npy: malformed header: 'shape' must be a tuple of integers"},
      {NpyFile("['descr']", f4), "a.npy: malformed header: it is not a dict"},
      {NpyFile(Header("'<f4'", "(2, 2)", "True"), f4 + "abcd"),
       "a.npy: Fortran-order arrays are not supported; save with numpy.ascontiguousarray"},
      {NpyFile(Header("'>f4'", "(3,)"), f4),
       "a.npy: big-endian data (descr `>f4`) is not supported; convert with arr.astype(arr.dtype.newbyteorder('<'))"},
      {NpyFile(Header("[('bf16', '>u2')]", "(3,)"), f4),
       "a.npy: big-endian data (descr `>u2`) is not supported; convert with arr.astype(arr.dtype.newbyteorder('<'))"},
      {NpyFile(Header("'|O'", "(3,)"), f4), "a.npy: object arrays (descr `|O`) are not supported"},
      {NpyFile(Header("'<c8'", "(3,)"), f4),
       "a.npy: unsupported dtype `<c8` (weft reads bool, int8-64, uint8-64, float16/32/64, and the structured types of "
       "docs/npy.md)"},
      {NpyFile(Header("[('x', '<f4'), ('y', '<f4')]", "(3,)"), f4),
       "a.npy: structured dtypes other than weft's one-field types (docs/npy.md) are not supported"},
      {NpyFile(Header("[('f16', '<u2')]", "(3,)"), f4),
       "a.npy: structured dtypes other than weft's one-field types (docs/npy.md) are not supported; found a field "
       "named 'f16'"},
      {NpyFile(Header("[('bf16', '<f2')]", "(3,)"), f4), "a.npy: field 'bf16' must have type '<u2', found `<f2`"},
      {NpyFile(Header("'<f4'", "(3,)"), f4.substr(0, 8)),
       "a.npy: truncated data: shape [3] needs 12 bytes, the file has 8"},
      {NpyFile(Header("'<f4'", "(3,)"), f4 + "abcd"), "a.npy: 4 extra bytes after the data (shape [3] needs 12)"},
      {NpyFile(Header("'<f4'", "(4294967296, 4294967296)"), f4),
       "a.npy: the element count of shape [4294967296, 4294967296] overflows"},
      {NpyFile(Header("'<f8'", "(2305843009213693952,)"), f4),
       "a.npy: the data size of shape [2305843009213693952] overflows"},
      {NpyFile(Header("'<f4'", "(99999999999999999999,)"), f4),
       "a.npy: a dimension in 'shape' does not fit in 64 bits, so the element count overflows"},
      {NpyFile(Header("'<f4'", "(-1, 3)"), f4), "a.npy: negative dimension in shape [-1, 3]"},
      {NpyFile(Header("[('i4', '|i1')]", "(3,)"), std::string("\x07\x08\x00", 3)),
       "a.npy: element 1 is 8, outside the range of i4 (-8..7)"},
      {NpyFile(Header("[('i4', '|i1')]", "(2,)"), std::string("\xf7\x00", 2)),
       "a.npy: element 0 is -9, outside the range of i4 (-8..7)"},
      {NpyFile(Header("[('u4', '|u1')]", "(2,)"), std::string("\x0f\x10", 2)),
       "a.npy: element 1 is 16, outside the range of u4 (0..15)"},
      {NpyFile(Header("'|b1'", "(3,)"), std::string("\x01\x00\x02", 3)),
       "a.npy: element 2 of a bool array is the byte 2, not 0 or 1"},
  };
  for (const Case& c : cases) {
    INFO("expected: " << c.message);
    CHECK(ErrorOf(c.bytes) == c.message);
  }
}

TEST_CASE("ReadNpy names the file when it cannot open or read it") {
  std::string dir = MakeTempDir();
  auto missing = ReadNpy(dir + "/missing.npy");
  REQUIRE(!missing.ok());
  CHECK(missing.error().message == dir + "/missing.npy: cannot open: No such file or directory");
  auto directory = ReadNpy(dir);
  REQUIRE(!directory.ok());
  CHECK(directory.error().message == dir + ": cannot read: Is a directory");
  auto unwritable = WriteNpy(dir + "/no/such/dir.npy", HostTensor::Zeros(Dtype::F32, {1}));
  REQUIRE(!unwritable.ok());
  CHECK(unwritable.error().message == dir + "/no/such/dir.npy: cannot write: No such file or directory");
  std::remove(dir.c_str());
}

TEST_CASE("WriteNpy refuses a tensor whose bytes do not match its shape") {
  auto bad = EncodeNpy(Tensor(Dtype::F32, {2}, {0, 0, 0}), "b.npy");
  REQUIRE(!bad.ok());
  CHECK(bad.error().message == "b.npy: the tensor has 3 bytes, its dtype f32 and shape [2] need 8");
  auto negative = EncodeNpy(Tensor(Dtype::F32, {-1}, {}), "n.npy");
  REQUIRE(!negative.ok());
  CHECK(negative.error().message == "n.npy: cannot write a tensor of shape [-1]");
}

// Every prefix of a valid file and every single-byte corruption either reads a consistent tensor
// or gives an error naming the file; under ASan/UBSan this is the no-crash property.
TEST_CASE("Truncated and corrupted files never crash the reader") {
  std::vector<std::string> files;
  for (Dtype dtype : {Dtype::F32, Dtype::I4, Dtype::Bool, Dtype::BF16}) {
    HostTensor t = HostTensor::Zeros(dtype, {2, 3});
    auto bytes = EncodeNpy(t, "f.npy");
    REQUIRE(bytes.ok());
    files.push_back(*bytes);
  }
  files.push_back(NpyFile("{'descr':[('u4','|u1')],'fortran_order':True,'shape':(6L,),}", std::string(6, '\x01'), 3));
  auto check = [](const std::string& bytes) {
    auto result = ReadNpyBytes(bytes, "f.npy");
    if (result.ok()) {
      CHECK(static_cast<std::int64_t>(result->bytes.size()) == ByteSize(result->dtype, result->Count()));
    } else {
      CHECK(result.error().message.rfind("f.npy: ", 0) == 0);
    }
  };
  int errors = 0;
  for (const std::string& file : files) {
    for (std::size_t n = 0; n < file.size(); ++n) {
      auto result = ReadNpyBytes(file.substr(0, n), "f.npy");
      REQUIRE(!result.ok());
      CHECK(result.error().message.rfind("f.npy: ", 0) == 0);
      ++errors;
    }
    for (std::size_t i = 0; i < file.size(); ++i) {
      for (int replacement :
           std::initializer_list<int>{0x00, 0x01, 0x7f, 0x80, 0xff, '(', ')', ',', '-', '9', '\'', '{', '[', 'L'}) {
        std::string corrupted = file;
        corrupted[i] = static_cast<char>(replacement);
        check(corrupted);
      }
      std::string flipped = file;
      flipped[i] = static_cast<char>(flipped[i] ^ 0x20);
      check(flipped);
    }
  }
  CHECK(errors > 500);
  // Deep nesting is refused, not recursed into.
  CHECK(ErrorOf(NpyFile("{'descr': " + std::string(100000, '[') + "}", "")) ==
        "a.npy: malformed header: literals nested too deeply");
}

}  // namespace
}  // namespace weft::runtime
