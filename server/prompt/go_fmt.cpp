// fmt.Sprintf for the verbs templates use (%v %s %d %q %t %f %e %g %x %X %c %o %b %%), with Go's
// flags, width and precision, and Go's error forms (%!d(string=x), %!s(MISSING), %!(EXTRA ...)).
#include <cmath>
#include <cstdio>

#include "server/prompt/go_template_exec.h"
#include "server/prompt/go_template_literals.h"

namespace vkllm::prompt {

namespace {

struct Spec {
  bool minus = false, plus = false, sharp = false, space = false, zero = false;
  int width = -1, prec = -1;
  char verb = 'v';
};

size_t rune_count(const std::string& s) {
  size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

std::string pad(std::string s, const Spec& sp, bool numeric) {
  if (sp.width < 0) return s;
  size_t n = rune_count(s);
  if (n >= static_cast<size_t>(sp.width)) return s;
  size_t fill = sp.width - n;
  if (sp.minus) return s + std::string(fill, ' ');
  if (sp.zero && numeric) {
    size_t sign = (!s.empty() && (s[0] == '-' || s[0] == '+' || s[0] == ' ')) ? 1 : 0;
    return s.substr(0, sign) + std::string(fill, '0') + s.substr(sign);
  }
  return std::string(fill, ' ') + s;
}

std::string bad_verb(char verb, const Value& v) {
  std::string s = "%!";
  s += verb;
  s += '(';
  if (v.is_nil()) return s + "<nil>)";
  return s + v.type_name() + "=" + go_sprint_value(v) + ")";
}

std::string utf8(int64_t r) {
  std::string out;
  append_utf8(out, r);
  return out;
}

std::string fmt_int(int64_t v, const Spec& sp) {
  int base = 10;
  bool upper = false;
  switch (sp.verb) {
    case 'x':
      base = 16;
      break;
    case 'X':
      base = 16;
      upper = true;
      break;
    case 'o':
      base = 8;
      break;
    case 'b':
      base = 2;
      break;
    case 'c':
      return pad(utf8(v), sp, false);
    case 'q': {
      std::string q = "'";
      q += utf8(v);
      q += '\'';
      return pad(q, sp, false);
    }
    default:
      break;
  }
  bool neg = v < 0;
  uint64_t u = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits;
  const char* dig = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  do {
    digits.insert(digits.begin(), dig[u % base]);
    u /= base;
  } while (u);
  if (sp.prec >= 0 && digits.size() < static_cast<size_t>(sp.prec))
    digits.insert(0, sp.prec - digits.size(), '0');
  if (sp.prec == 0 && v == 0) digits.clear();
  if (sp.sharp) {
    if (base == 16) digits.insert(0, upper ? "0X" : "0x");
    if (base == 8 && (digits.empty() || digits[0] != '0')) digits.insert(digits.begin(), '0');
    if (base == 2) digits.insert(0, "0b");
  }
  std::string sign = neg ? "-" : sp.plus ? "+" : sp.space ? " " : "";
  Spec p = sp;
  if (sp.prec >= 0) p.zero = false;
  return pad(sign + digits, p, true);
}

std::string fmt_float(double d, const Spec& sp) {
  char verb = sp.verb == 'v' ? 'g' : sp.verb;
  std::string s;
  if (!std::isfinite(d)) {
    s = std::isnan(d) ? "NaN" : (d > 0 ? (sp.plus ? "+Inf" : "Inf") : "-Inf");
    Spec p = sp;
    p.zero = false;
    return pad(s, p, false);
  }
  if ((verb == 'g' || verb == 'G') && sp.prec < 0) {
    s = go_format_float(d);
    if (verb == 'G')
      for (auto& c : s) c = static_cast<char>(std::toupper(c));
  } else {
    char fmt[8] = {'%', '.', '*', verb == 'F' ? 'f' : verb, 0};
    int prec = sp.prec < 0 ? 6 : sp.prec;
    int n = std::snprintf(nullptr, 0, fmt, prec, d);
    s.resize(n + 1);
    std::snprintf(s.data(), s.size(), fmt, prec, d);
    s.resize(n);
  }
  if (s[0] != '-' && sp.plus)
    s = "+" + s;
  else if (s[0] != '-' && sp.space)
    s = " " + s;
  return pad(s, sp, true);
}

std::string fmt_value(const Value& v, const Spec& sp);

std::string fmt_compound(const Value& v, const Spec& sp) {
  return go_sprint_compound(v, [&](const Value& e) { return fmt_value(e, sp); });
}

std::string fmt_value(const Value& v, const Spec& sp) {
  char verb = sp.verb;
  if (v.is_nil()) {
    if (verb == 'v') return pad("<nil>", sp, false);
    return bad_verb(verb, v);
  }
  if (const std::string* s = v.stringer()) {
    if (verb == 'v' || verb == 's') return pad(*s, sp, false);
    if (verb == 'q') return pad(go_quote(*s), sp, false);
  }
  switch (v.kind()) {
    case Value::Kind::Bool:
      if (verb == 'v' || verb == 't') return pad(v.as_bool() ? "true" : "false", sp, false);
      return bad_verb(verb, v);
    case Value::Kind::Int:
      switch (verb) {
        case 'v':
        case 'd':
        case 'x':
        case 'X':
        case 'o':
        case 'b':
        case 'c':
        case 'q':
          return fmt_int(v.as_int(), sp);
        default:
          return bad_verb(verb, v);
      }
    case Value::Kind::Float:
      switch (verb) {
        case 'v':
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G':
          return fmt_float(v.as_float(), sp);
        default:
          return bad_verb(verb, v);
      }
    case Value::Kind::String: {
      std::string s = v.as_string();
      switch (verb) {
        case 'v':
        case 's':
          if (sp.prec >= 0) {
            size_t runes = 0, i = 0;
            for (; i < s.size(); ++i) {
              if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
                if (runes == static_cast<size_t>(sp.prec)) break;
                ++runes;
              }
            }
            s.resize(i);
          }
          return pad(s, sp, false);
        case 'q':
          return pad(go_quote(s), sp, false);
        case 'x':
        case 'X': {
          const char* dig = verb == 'x' ? "0123456789abcdef" : "0123456789ABCDEF";
          std::string out;
          for (char c : s) {
            out += dig[static_cast<unsigned char>(c) >> 4];
            out += dig[static_cast<unsigned char>(c) & 15];
          }
          return pad(out, sp, false);
        }
        default:
          return bad_verb(verb, v);
      }
    }
    default:
      return pad(fmt_compound(v, sp), sp, false);
  }
}

}  // namespace

std::string go_sprintf(const std::string& format, const std::vector<Value>& args,
                       size_t max_output) {
  std::string out;
  size_t argi = 0;
  auto parse_num = [&](size_t& i, int& out_num) {
    bool any = false;
    int n = 0;
    while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) {
      n = n * 10 + (format[i] - '0');
      if (n > 1'000'000) n = 1'000'001;  // Go: too large → %!(BADWIDTH)/%!(BADPREC)
      any = true;
      ++i;
    }
    out_num = n;
    return any;
  };
  for (size_t i = 0; i < format.size();) {
    if (out.size() > max_output) throw ExecError{"output exceeds the size limit"};
    char c = format[i];
    if (c != '%') {
      out += c;
      ++i;
      continue;
    }
    ++i;
    Spec sp;
    for (; i < format.size(); ++i) {
      char f = format[i];
      if (f == '-') {
        sp.minus = true;
        sp.zero = false;
      } else if (f == '+')
        sp.plus = true;
      else if (f == '#')
        sp.sharp = true;
      else if (f == ' ')
        sp.space = true;
      else if (f == '0')
        sp.zero = !sp.minus;
      else
        break;
    }
    bool bad_width = false, bad_prec = false;
    if (i < format.size() && format[i] == '*') {
      ++i;
      if (argi < args.size() && args[argi].kind() == Value::Kind::Int &&
          std::llabs(args[argi].as_int()) <= 1'000'000) {
        int64_t w = args[argi].as_int();
        if (w < 0) {
          sp.minus = true;
          sp.zero = false;
          w = -w;
        }
        sp.width = static_cast<int>(w);
      } else {
        bad_width = true;
      }
      ++argi;
    } else {
      int w = 0;
      if (parse_num(i, w)) {
        if (w > 1'000'000)
          bad_width = true;
        else
          sp.width = w;
      }
    }
    if (i < format.size() && format[i] == '.') {
      ++i;
      if (i < format.size() && format[i] == '*') {
        ++i;
        if (argi < args.size() && args[argi].kind() == Value::Kind::Int &&
            args[argi].as_int() >= 0 && args[argi].as_int() <= 1'000'000) {
          sp.prec = static_cast<int>(args[argi].as_int());
        } else {
          bad_prec = true;
        }
        ++argi;
      } else {
        int p = 0;
        parse_num(i, p);
        if (p > 1'000'000)
          bad_prec = true;
        else
          sp.prec = p;
      }
    }
    if (i >= format.size()) {
      out += "%!(NOVERB)";
      break;
    }
    // The verb is one UTF-8 rune.
    size_t vlen = 1;
    auto lead = static_cast<unsigned char>(format[i]);
    if (lead >= 0xF0)
      vlen = 4;
    else if (lead >= 0xE0)
      vlen = 3;
    else if (lead >= 0xC0)
      vlen = 2;
    std::string verb_text = format.substr(i, vlen);
    i += vlen;
    if (bad_width) out += "%!(BADWIDTH)";
    if (bad_prec) out += "%!(BADPREC)";
    if (verb_text == "%") {
      out += '%';
      continue;
    }
    if (argi >= args.size()) {
      out += "%!" + verb_text + "(MISSING)";
      continue;
    }
    const Value& v = args[argi++];
    sp.verb = vlen == 1 ? verb_text[0] : '?';
    static const std::string known = "vdsqtfFeEgGxXcob";
    if (vlen != 1 || known.find(sp.verb) == std::string::npos) {
      if (v.is_nil()) {
        out += "%!" + verb_text + "(<nil>)";
      } else {
        out += "%!" + verb_text + "(" + v.type_name() + "=" + go_sprint_value(v) + ")";
      }
      continue;
    }
    out += fmt_value(v, sp);
  }
  if (argi < args.size()) {
    out += "%!(EXTRA ";
    for (size_t k = argi; k < args.size(); ++k) {
      if (k > argi) out += ", ";
      if (args[k].is_nil())
        out += "<nil>";
      else
        out += args[k].type_name() + "=" + go_sprint_value(args[k]);
    }
    out += ")";
  }
  if (out.size() > max_output) throw ExecError{"output exceeds the size limit"};
  return out;
}

}  // namespace vkllm::prompt
