// FormatTensor (format.h): NumPy 1.24's `str(array)` (numpy/core/arrayprint.py) re-expressed in
// C++, with NumPy's default options. The steps follow NumPy's:
//
// 1. A rank-0 tensor prints as a NumPy scalar; an empty tensor as `[]`.
// 2. Above 1000 elements, only the first and last 3 items of each longer axis are shown; the
//    element format is chosen from those elements alone.
// 3. The element format: bools ` True`/`False`; integers right-aligned to the widest; floats as
//    NumPy's FloatingFormat chooses: scientific if the largest magnitude is >= 1e8, the smallest
//    nonzero < 1e-4, or their ratio > 1000; otherwise positional with at most 8 fractional digits,
//    aligned on the decimal point.
// 4. Nested brackets, one row a line with blank lines between blocks, rows wrapped at 75 columns
//    under a hanging indent (NumPy's _formatArray).
//
// Digits come from NumPy's Dragon4 in its "unique" mode: the shortest digits that round-trip in
// the element's dtype, cut to a precision (rounding the exact value) or extended to a minimum
// number of digits (rounding the exact value). std::to_chars gives the shortest digits of f32 and
// f64 and the exact or correctly rounded digits of any value; for f16, bf16 and f8 the shortest
// round-tripping digits are found by trying each length's two nearest candidates against the
// rounding interval, compared exactly as decimal strings.
#include "weft/format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "weft/numerics.h"

namespace weft::runtime {
namespace {

constexpr int kPrecision = 8;
constexpr std::int64_t kThreshold = 1000;
constexpr std::int64_t kEdgeItems = 3;
constexpr int kLineWidth = 75;

// A nonnegative decimal: digits[0].digits[1..] * 10^exponent, with no trailing zeros; zero is
// digits "0", exponent 0.
struct Decimal {
  std::string digits = "0";
  int exponent = 0;
  bool IsZero() const { return digits == "0"; }
  // Digits after the decimal point when written positionally.
  int FracDigits() const { return IsZero() ? 0 : std::max(0, static_cast<int>(digits.size()) - 1 - exponent); }
};

Decimal Normalize(std::string digits, int exponent) {
  std::size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return Decimal{};
  exponent -= static_cast<int>(first);
  digits.erase(0, first);
  digits.erase(digits.find_last_not_of('0') + 1);
  return Decimal{digits, exponent};
}

// Parses what std::to_chars writes ("-12.50", "1.25e-07", "3e+20"), ignoring the sign.
Decimal ParseChars(std::string_view s) {
  if (!s.empty() && s[0] == '-') s.remove_prefix(1);
  int exponent = 0;
  std::size_t e = s.find('e');
  if (e != std::string_view::npos) {
    std::string_view exp_text = s.substr(e + 1);
    if (!exp_text.empty() && exp_text[0] == '+') exp_text.remove_prefix(1);
    std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exponent);
    s = s.substr(0, e);
  }
  std::size_t dot = s.find('.');
  std::string int_part(s.substr(0, dot));
  std::string frac_part(dot == std::string_view::npos ? "" : s.substr(dot + 1));
  // int_part.frac_part * 10^exponent = (int_part frac_part) * 10^(exponent - |frac|); the first
  // digit of that string sits at 10^(exponent + |int_part| - 1).
  return Normalize(int_part + frac_part, exponent + static_cast<int>(int_part.size()) - 1);
}

template <typename... Args>
Decimal ToCharsDecimal(double x, Args... args) {
  std::vector<char> buffer(1600);
  auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), std::fabs(x), args...);
  return ParseChars(std::string_view(buffer.data(), static_cast<std::size_t>(result.ptr - buffer.data())));
}

// The exact decimal value of |x| (every double is a finite decimal).
Decimal Exact(double x) {
  return ToCharsDecimal(x, std::chars_format::scientific, 1100);
}
// |x| rounded (half to even on the exact value) at `digits` fractional digits, positional or scientific.
Decimal RoundFixed(double x, int digits) {
  return ToCharsDecimal(x, std::chars_format::fixed, digits);
}
Decimal RoundScientific(double x, int digits) {
  return ToCharsDecimal(x, std::chars_format::scientific, digits);
}

int Compare(const Decimal& a, const Decimal& b) {
  if (a.IsZero() || b.IsZero()) return a.IsZero() == b.IsZero() ? 0 : a.IsZero() ? -1 : 1;
  if (a.exponent != b.exponent) return a.exponent < b.exponent ? -1 : 1;
  std::size_t n = std::max(a.digits.size(), b.digits.size());
  for (std::size_t i = 0; i < n; ++i) {
    char x = i < a.digits.size() ? a.digits[i] : '0';
    char y = i < b.digits.size() ? b.digits[i] : '0';
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

// A float element: its exact value and bit pattern (the dtype is the tensor's).
struct FloatElem {
  double value;
  std::uint64_t bits;
};

// The shortest digits that read back (rounding to nearest even) as |x| in `dtype`. @pre x finite
Decimal Shortest(Dtype dtype, const FloatElem& x) {
  if (x.value == 0) return Decimal{};
  if (dtype == Dtype::F64) return ToCharsDecimal(x.value, std::chars_format::scientific);
  if (dtype == Dtype::F32) {
    std::vector<char> buffer(64);
    auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), std::fabs(static_cast<float>(x.value)),
                                std::chars_format::scientific);
    return ParseChars(std::string_view(buffer.data(), static_cast<std::size_t>(result.ptr - buffer.data())));
  }
  // f16, bf16, f8: the rounding interval of |x| from its neighbours (exact in f64); its ends count
  // when the pattern is even, as round-to-nearest-even sends them there.
  std::uint64_t magnitude = x.bits & ((std::uint64_t{1} << (Bits(dtype) - 1)) - 1);
  double v = std::fabs(x.value);
  double below = magnitude > 0 ? DecodeFloat(dtype, magnitude - 1) : 0.0;
  double above = DecodeFloat(dtype, magnitude + 1);
  double low = (v + below) / 2;
  double high = std::isfinite(above) && above > v ? (v + above) / 2 : v + (v - below) / 2;
  bool inclusive = magnitude % 2 == 0;
  Decimal low_d = Exact(low), high_d = Exact(high), exact = Exact(v);
  auto inside = [&](const Decimal& c) {
    int lo = Compare(c, low_d), hi = Compare(c, high_d);
    return (lo > 0 || (inclusive && lo == 0)) && (hi < 0 || (inclusive && hi == 0));
  };
  for (std::size_t p = 1; p < exact.digits.size(); ++p) {
    Decimal down = Normalize(exact.digits.substr(0, p), exact.exponent);
    std::string up_digits = exact.digits.substr(0, p);
    int i = static_cast<int>(p) - 1;
    while (i >= 0 && up_digits[static_cast<std::size_t>(i)] == '9') up_digits[static_cast<std::size_t>(i--)] = '0';
    int up_exponent = exact.exponent;
    if (i < 0) {
      up_digits = "1" + up_digits;
      ++up_exponent;
    } else {
      ++up_digits[static_cast<std::size_t>(i)];
    }
    Decimal up = Normalize(up_digits, up_exponent);
    // The nearer candidate first; on a tie the one with the even last digit.
    std::string rest = exact.digits.substr(p);
    int vs_half = rest[0] > '5' ? 1 : rest[0] < '5' ? -1 : rest.size() > 1 ? 1 : 0;
    bool up_first = vs_half > 0 || (vs_half == 0 && (exact.digits[p - 1] - '0') % 2 == 1);
    const Decimal& first = up_first ? up : down;
    const Decimal& second = up_first ? down : up;
    if (inside(first)) return first;
    if (inside(second)) return second;
  }
  return exact;
}

// NumPy's Dragon4 in unique mode: the shortest digits, rounded at `precision` fractional digits
// (-1: no limit) when longer. `min_digits` >= 0 makes Dragon4 go on generating digits of the exact
// value down to that many fractional digits (in positional mode 0 means down to the units digit:
// an f16 29008 prints `29008.` in an array although `29010` round-trips), then round there.
Decimal Digits(Dtype dtype, const FloatElem& x, bool scientific, int precision, int min_digits) {
  Decimal d = Shortest(dtype, x);
  int frac = static_cast<int>(d.digits.size()) - 1;  // scientific: digits after the first
  if (!scientific) frac -= d.exponent;               // positional: may be negative (trailing zeros)
  if (precision >= 0 && frac > precision) {
    return scientific ? RoundScientific(x.value, precision) : RoundFixed(x.value, precision);
  }
  if (min_digits >= 0 && frac < min_digits && !d.IsZero()) {
    return scientific ? RoundScientific(x.value, min_digits) : RoundFixed(x.value, min_digits);
  }
  return d;
}

// NumPy's trim modes: 'k' keep, '.' drop trailing zeros keeping the point, '0' keep one zero after
// the point, '-' drop the point too.
enum class Trim { Keep, Dot, LeaveOneZero, DropDot };

std::string FinishFraction(std::string frac, Trim trim, int min_digits) {
  while (static_cast<int>(frac.size()) < min_digits) frac += '0';
  if (!frac.empty()) return "." + frac;
  if (trim == Trim::DropDot) return "";
  if (trim == Trim::LeaveOneZero) return ".0";
  return ".";
}

std::string PadLeft(std::string s, int width) {
  if (static_cast<int>(s.size()) < width) s.insert(0, static_cast<std::size_t>(width) - s.size(), ' ');
  return s;
}

std::string Positional(bool negative, const Decimal& d, Trim trim, int min_digits, int pad_left, int pad_right) {
  std::string int_part, frac_part;
  if (d.IsZero() || d.exponent < 0) {
    int_part = "0";
    if (!d.IsZero()) frac_part = std::string(static_cast<std::size_t>(-d.exponent - 1), '0') + d.digits;
  } else {
    std::size_t n = static_cast<std::size_t>(d.exponent) + 1;
    int_part = d.digits.substr(0, std::min(n, d.digits.size()));
    if (n > d.digits.size()) int_part.append(n - d.digits.size(), '0');
    if (n < d.digits.size()) frac_part = d.digits.substr(n);
  }
  std::string frac = FinishFraction(frac_part, trim, min_digits);
  std::string out = PadLeft((negative ? "-" : "") + int_part, pad_left) + frac;
  int right = frac.empty() ? 0 : static_cast<int>(frac.size()) - 1;
  if (right < pad_right) out.append(static_cast<std::size_t>(pad_right - right), ' ');
  return out;
}

std::string Scientific(bool negative, const Decimal& d, Trim trim, int min_digits, int pad_left, int exp_digits) {
  std::string out = PadLeft((negative ? "-" : "") + d.digits.substr(0, 1), pad_left);
  out += FinishFraction(d.digits.substr(1), trim, min_digits);
  std::string exp = std::to_string(std::abs(d.exponent));
  while (static_cast<int>(exp.size()) < std::max(exp_digits, 2)) exp.insert(0, "0");
  return out + "e" + (d.exponent < 0 ? "-" : "+") + exp;
}

// How NumPy prints a float scalar (`str(np.float32(x))`): positional with the shortest digits
// between 1e-4 and 1e16, scientific outside.
std::string FloatScalar(Dtype dtype, const FloatElem& x) {
  if (std::isnan(x.value)) return "nan";
  if (std::isinf(x.value)) return x.value < 0 ? "-inf" : "inf";
  bool negative = std::signbit(x.value);
  double a = std::fabs(x.value);
  if (a == 0 || (a >= 1e-4 && a < 1e16)) {
    return Positional(negative, Digits(dtype, x, false, -1, -1), Trim::LeaveOneZero, -1, -1, -1);
  }
  return Scientific(negative, Digits(dtype, x, true, -1, -1), Trim::DropDot, -1, -1, -1);
}

// NumPy's FloatingFormat with its defaults (precision 8, floatmode 'maxprec', sign '-').
class FloatFormat {
 public:
  FloatFormat(Dtype dtype, const std::vector<FloatElem>& data) : dtype_(dtype) {
    std::vector<FloatElem> finite;
    for (const FloatElem& x : data) {
      if (std::isfinite(x.value)) finite.push_back(x);
    }
    // Scientific or positional, from the nonzero finite magnitudes. The ratio is computed in the
    // dtype as NumPy does (f16 rounds its f32 quotient); bf16 and f8 keep the f32 quotient, since
    // rounding it to an 8-bit format would saturate.
    bool any_nonzero = false;
    double max_val = 0, min_val = 0;
    for (const FloatElem& x : finite) {
      double a = std::fabs(x.value);
      if (a == 0) continue;
      if (!any_nonzero || a > max_val) max_val = a;
      if (!any_nonzero || a < min_val) min_val = a;
      any_nonzero = true;
    }
    if (any_nonzero) {
      double ratio;
      if (dtype == Dtype::F64) {
        ratio = max_val / min_val;
      } else {
        float q = static_cast<float>(max_val) / static_cast<float>(min_val);
        ratio = dtype == Dtype::F16 ? RoundToDtype(Dtype::F16, q) : q;
      }
      exp_format_ = max_val >= 1e8 || min_val < 0.0001 || ratio > 1000.;
    }
    if (finite.empty()) {
      pad_left_ = pad_right_ = 0;
      trim_ = Trim::Dot;
      exp_size_ = -1;
      min_digits_ = -1;
    } else if (exp_format_) {
      int max_frac = 0, max_int = 0, max_exp = 0;
      for (const FloatElem& x : finite) {
        Decimal d = Digits(dtype, x, true, kPrecision, -1);
        max_frac = std::max(max_frac, static_cast<int>(d.digits.size()) - 1);
        max_int = std::max(max_int, std::signbit(x.value) ? 2 : 1);
        max_exp = std::max(max_exp, std::max(2, static_cast<int>(std::to_string(std::abs(d.exponent)).size())));
      }
      exp_size_ = max_exp;
      trim_ = Trim::Keep;
      precision_ = min_digits_ = max_frac;
      pad_left_ = max_int;
      pad_right_ = exp_size_ + 2 + precision_;
    } else {
      int max_frac = 0, max_int = 0;
      for (const FloatElem& x : finite) {
        Decimal d = Digits(dtype, x, false, kPrecision, -1);
        max_frac = std::max(max_frac, d.FracDigits());
        int int_len = d.exponent < 0 || d.IsZero() ? 1 : d.exponent + 1;
        max_int = std::max(max_int, int_len + (std::signbit(x.value) ? 1 : 0));
      }
      pad_left_ = max_int;
      pad_right_ = max_frac;
      exp_size_ = -1;
      trim_ = Trim::Dot;
      min_digits_ = 0;
    }
    if (finite.size() != data.size()) {
      bool negative_inf = false;
      for (const FloatElem& x : data) negative_inf |= std::isinf(x.value) && x.value < 0;
      int offset = pad_right_ + 1;
      pad_left_ = std::max({pad_left_, 3 - offset, 3 + (negative_inf ? 1 : 0) - offset});
    }
  }

  std::string operator()(const FloatElem& x) const {
    if (!std::isfinite(x.value)) {
      std::string text = std::isnan(x.value) ? "nan" : x.value < 0 ? "-inf" : "inf";
      return PadLeft(text, pad_left_ + pad_right_ + 1);
    }
    bool negative = std::signbit(x.value);
    if (exp_format_) {
      return Scientific(negative, Digits(dtype_, x, true, precision_, min_digits_), trim_, min_digits_, pad_left_,
                        exp_size_);
    }
    return Positional(negative, Digits(dtype_, x, false, precision_, min_digits_), trim_, min_digits_, pad_left_,
                      pad_right_);
  }

 private:
  Dtype dtype_;
  bool exp_format_ = false;
  int precision_ = kPrecision;
  int min_digits_ = -1;
  int pad_left_ = 0;
  int pad_right_ = 0;
  int exp_size_ = -1;
  Trim trim_ = Trim::Dot;
};

bool IsFloat(Dtype d) {
  return IsFloatDtype(d);
}

FloatElem LoadFloat(const HostTensor& t, std::int64_t i) {
  std::uint64_t bits = LoadBits(t, i);
  return FloatElem{DecodeFloat(t.dtype, bits), bits};
}

std::string IntText(const HostTensor& t, std::int64_t i) {
  std::uint64_t bits = LoadBits(t, i);
  if (IsSignedDtype(t.dtype)) return std::to_string(WrapSigned(bits, t.dtype));
  return std::to_string(bits);
}

// C-order strides in elements.
std::vector<std::int64_t> Strides(const HostTensor& t) {
  std::vector<std::int64_t> strides(t.shape.size(), 1);
  for (std::size_t a = t.shape.size(); a-- > 1;) strides[a - 1] = strides[a] * t.shape[a];
  return strides;
}

// The indices NumPy shows along an axis of length n: all, or with summarization the first and last
// kEdgeItems when n > 2 * kEdgeItems (-1 stands for the `...` between them).
std::vector<std::int64_t> ShownIndices(std::int64_t n, bool summarize) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      out.push_back(-1);
      i = n - kEdgeItems;
    }
    out.push_back(i);
  }
  return out;
}

// The flat indices of the elements NumPy formats from (the shown ones), odometer order. Loops, not
// recursion, here and below: a tensor's rank is bounded only by memory.
std::vector<std::int64_t> ShownElements(const HostTensor& t, bool summarize) {
  std::vector<std::int64_t> strides = Strides(t);
  std::vector<std::vector<std::int64_t>> axes;
  for (std::int64_t n : t.shape) {
    std::vector<std::int64_t> shown = ShownIndices(n, summarize);
    shown.erase(std::remove(shown.begin(), shown.end(), -1), shown.end());
    axes.push_back(std::move(shown));
  }
  std::vector<std::int64_t> out;
  std::vector<std::size_t> position(axes.size(), 0);
  for (;;) {
    std::int64_t offset = 0;
    for (std::size_t a = 0; a < axes.size(); ++a) offset += axes[a][position[a]] * strides[a];
    out.push_back(offset);
    std::size_t a = axes.size();
    while (a > 0 && ++position[a - 1] == axes[a - 1].size()) position[--a] = 0;
    if (a == 0) return out;
  }
}

// NumPy's _extendLine: append `word`, first wrapping if the line would pass `width` (unless the line
// holds nothing but the indent).
void ExtendLine(std::string& s, std::string& line, const std::string& word, int width, const std::string& indent) {
  bool wrap = static_cast<int>(line.size() + word.size()) > width && line.size() > indent.size();
  if (wrap) {
    std::size_t end = line.find_last_not_of(' ');
    s += line.substr(0, end == std::string::npos ? 0 : end + 1) + "\n";
    line = indent;
  }
  line += word;
}

// NumPy's _formatArray, its recursion over axes run with an explicit stack. At depth `axis` the
// hanging indent is axis + 1 spaces and the width 75 - axis (each `[` takes a column).
// @pre rank >= 1, no dim is 0
std::string FormatArray(const HostTensor& t, bool summarize, const std::function<std::string(std::int64_t)>& element) {
  const std::vector<std::int64_t> strides = Strides(t);
  const int rank = t.Rank();
  struct Frame {
    int axis = 0;
    std::int64_t offset = 0;
    std::vector<std::int64_t> children;  // ShownIndices
    std::size_t next = 0;
    std::string s, line;
  };
  auto make_frame = [&](int axis, std::int64_t offset) {
    Frame f;
    f.axis = axis;
    f.offset = offset;
    f.children = ShownIndices(t.shape[static_cast<std::size_t>(axis)], summarize);
    f.line = std::string(static_cast<std::size_t>(axis) + 1, ' ');
    return f;
  };
  // Adds the text of the child just visited (an element, a nested block or `...`) to frame f.
  auto deliver = [&](Frame& f, const std::string& word) {
    const std::string indent(static_cast<std::size_t>(f.axis) + 1, ' ');
    const bool last = f.next == f.children.size();
    if (rank - f.axis == 1) {
      ExtendLine(f.s, f.line, word, kLineWidth - f.axis - 1, indent);
      if (last) {
        f.s += f.line;
      } else {
        f.line += " ";
      }
    } else {
      f.s += indent + word;
      if (!last) f.s += std::string(static_cast<std::size_t>(rank - f.axis - 1), '\n');
    }
  };
  std::vector<Frame> stack;
  stack.push_back(make_frame(0, 0));
  for (;;) {
    Frame& f = stack.back();
    if (f.next == f.children.size()) {
      std::string block = "[" + f.s.substr(static_cast<std::size_t>(f.axis) + 1) + "]";
      stack.pop_back();
      if (stack.empty()) return block;
      deliver(stack.back(), block);
      continue;
    }
    std::int64_t child = f.children[f.next++];
    if (child < 0) {
      deliver(f, "...");
    } else if (rank - f.axis == 1) {
      deliver(f, element(f.offset + child * strides[static_cast<std::size_t>(f.axis)]));
    } else {
      Frame next = make_frame(f.axis + 1, f.offset + child * strides[static_cast<std::size_t>(f.axis)]);
      stack.push_back(std::move(next));
    }
  }
}

}  // namespace

std::string FormatTensor(const HostTensor& tensor) {
  const Dtype dtype = tensor.dtype;
  if (tensor.Rank() == 0) {
    if (dtype == Dtype::Bool) return LoadBits(tensor, 0) ? "True" : "False";
    if (IsFloat(dtype)) return FloatScalar(dtype, LoadFloat(tensor, 0));
    return IntText(tensor, 0);
  }
  const std::int64_t count = tensor.Count();
  if (count == 0) return "[]";
  const bool summarize = count > kThreshold;
  const std::vector<std::int64_t> shown = ShownElements(tensor, summarize);

  std::function<std::string(std::int64_t)> element;
  if (dtype == Dtype::Bool) {
    element = [&](std::int64_t i) { return std::string(LoadBits(tensor, i) ? " True" : "False"); };
  } else if (IsFloat(dtype)) {
    std::vector<FloatElem> data;
    for (std::int64_t i : shown) data.push_back(LoadFloat(tensor, i));
    auto format = std::make_shared<FloatFormat>(dtype, data);
    element = [&tensor, format](std::int64_t i) { return (*format)(LoadFloat(tensor, i)); };
  } else {
    std::size_t width = 0;
    for (std::int64_t i : shown) width = std::max(width, IntText(tensor, i).size());
    element = [&tensor, width](std::int64_t i) { return PadLeft(IntText(tensor, i), static_cast<int>(width)); };
  }
  return FormatArray(tensor, summarize, element);
}

}  // namespace weft::runtime
