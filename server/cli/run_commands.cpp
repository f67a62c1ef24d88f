// `vkllm run`, `vkllm ps` and `vkllm stop`, as `ollama run/ps/stop` behave and with the API calls
// they make (compat §8): run shows the model (pulling it on a 404), then either answers one prompt
// (arguments and/or piped stdin) through /api/generate, or opens the interactive chat: /api/chat
// per turn with the whole history, `"""` for multi-line input, and the /set, /show, /load, /save,
// /clear and /bye commands.
#include <unistd.h>

#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <sstream>

#include "server/cli/cli_output.h"
#include "server/cli/commands.h"
#include "server/cli/progress_display.h"

namespace vkllm::cli {

namespace {

using json = nlohmann::json;

struct RunOptions {
  std::string model;
  std::vector<std::string> prompt;
  bool verbose = false;
  std::string format;
  std::string think;  // "", "true", "false", "high", ...
  bool hide_thinking = false;
  std::string keep_alive;
  bool insecure = false;
  bool no_wordwrap = false;  // accepted for `ollama run` compatibility; vkllm never wraps
};

// The chat state the interactive commands change.
struct Session {
  std::string model;
  json options = json::object();
  std::string system;
  std::string format;
  json think;  // null: the model's default
  bool verbose = false;
  bool hide_thinking = false;
  std::string keep_alive;
  json messages = json::array();
  std::vector<std::string> capabilities;
};

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

json think_value(const std::string& t) {
  if (t.empty()) return nullptr;
  if (t == "true") return true;
  if (t == "false") return false;
  return t;
}

// ---- Image paths in a prompt, as `ollama run` reads them for a model with `vision`
// (cmd/interactive.go: extractFileNames, normalizeFilePath, getImageData).

// Shell escapes a dragged-in path carries.
std::string normalize_file_path(const std::string& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '\\' && i + 1 < path.size() &&
        std::string_view(" ()[]{}$&;'\\*?~").find(path[i + 1]) != std::string_view::npos) {
      out += path[++i];
    } else {
      out += path[i];
    }
  }
  return out;
}

// The picture formats Ollama's client sends (its http.DetectContentType check), from the first
// bytes: JPEG, PNG, WebP.
bool is_image_file(const std::string& head) {
  return head.starts_with("\xFF\xD8\xFF") || head.starts_with("\x89PNG\r\n\x1A\n") ||
         (head.size() >= 12 && head.starts_with("RIFF") && head.compare(8, 4, "WEBP") == 0);
}

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// Takes the paths of existing pictures out of `prompt` (an absolute or ./ path ending in .jpg,
// .jpeg, .png or .webp, spaces escaped or not, perhaps in single quotes) and returns them as
// base64; a path that is not a file stays text. Throws std::runtime_error for a file that is
// not a picture or is over 100 MB, as `ollama run` refuses it.
std::vector<std::string> take_images(std::string& prompt) {
  static const std::regex path(R"((?:[a-zA-Z]:)?(?:\./|/|\\)[\S\\ ]+?\.(?:jpg|jpeg|png|webp)\b)",
                               std::regex::icase);
  std::vector<std::string> found;
  for (std::sregex_iterator it(prompt.begin(), prompt.end(), path), end; it != end; ++it)
    found.push_back(it->str());
  std::vector<std::string> images;
  for (const std::string& fp : found) {
    const std::string nfp = normalize_file_path(fp);
    std::ifstream in(nfp, std::ios::binary);
    if (!in || std::filesystem::is_directory(nfp)) continue;
    const std::string bytes{std::istreambuf_iterator<char>(in), {}};
    if (!is_image_file(bytes.substr(0, 16)))
      throw std::runtime_error("invalid file type: " + nfp + " is not a JPEG, PNG or WebP image");
    if (bytes.size() > (100u << 20))
      throw std::runtime_error("file size exceeds maximum limit (100MB)");
    std::cerr << "Added image '" << nfp << "'\n";
    for (const std::string& text : {"'" + nfp + "'", "'" + fp + "'", fp}) {
      for (size_t at; (at = prompt.find(text)) != std::string::npos;) prompt.erase(at, text.size());
    }
    images.push_back(base64(bytes));
  }
  const size_t first = prompt.find_first_not_of(" \t\n\r");
  const size_t last = prompt.find_last_not_of(" \t\n\r");
  prompt = first == std::string::npos ? "" : prompt.substr(first, last - first + 1);
  return images;
}

// /api/show, pulling the model first when the server does not have it (as `ollama run`).
json show_or_pull(ApiClient& client, const std::string& model, bool insecure) {
  json req{{"model", model}};
  auto r = client.request("POST", "/api/show", req);
  if (r.status == 404) {
    json pull{{"model", model}, {"insecure", insecure}, {"stream", true}};
    stream_with_progress(client, "/api/pull", pull);
    r = client.request("POST", "/api/show", req);
  }
  if (r.status / 100 != 2) throw ApiError(r.status, error_text(r));
  return json::parse(r.body);
}

void print_metrics(const json& done) {
  auto secs = [&](const char* k) { return done.value(k, int64_t{0}) / 1e9; };
  auto rate = [&](const char* count, const char* dur) {
    const double d = secs(dur);
    return d > 0 ? done.value(count, 0) / d : 0.0;
  };
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "total duration:       %.6fs\nload duration:        %.6fs\n"
                "prompt eval count:    %d token(s)\nprompt eval duration: %.6fs\n"
                "prompt eval rate:     %.2f tokens/s\neval count:           %d token(s)\n"
                "eval duration:        %.6fs\neval rate:            %.2f tokens/s\n",
                secs("total_duration"), secs("load_duration"), done.value("prompt_eval_count", 0),
                secs("prompt_eval_duration"), rate("prompt_eval_count", "prompt_eval_duration"),
                done.value("eval_count", 0), secs("eval_duration"),
                rate("eval_count", "eval_duration"));
  std::cerr << buf;
}

// Prints a streamed answer (thinking first, as `ollama run` shows it) and returns its content.
class AnswerPrinter {
 public:
  explicit AnswerPrinter(bool hide_thinking) : hide_thinking_(hide_thinking) {}
  void thinking(const std::string& t) {
    if (t.empty() || hide_thinking_) return;
    if (!in_thinking_) {
      std::cout << "Thinking...\n";
      in_thinking_ = true;
    }
    std::cout << t << std::flush;
  }
  void content(const std::string& c) {
    if (c.empty()) return;
    end_thinking();
    std::cout << c << std::flush;
    text_ += c;
  }
  void tool_calls(const json& calls) {
    end_thinking();
    for (const auto& c : calls) {
      std::cout << "[tool call] " << c["function"].value("name", "") << " "
                << c["function"].value("arguments", json::object()).dump() << "\n";
    }
  }
  void finish() {
    end_thinking();
    if (!text_.empty() && text_.back() != '\n') std::cout << "\n";
    std::cout << std::endl;
  }
  const std::string& text() const { return text_; }

 private:
  void end_thinking() {
    if (in_thinking_) {
      std::cout << "\n...done thinking.\n\n";
      in_thinking_ = false;
    }
  }
  bool hide_thinking_;
  bool in_thinking_ = false;
  std::string text_;
};

void add_common(json& body, const Session& s) {
  if (!s.format.empty()) body["format"] = s.format;
  if (!s.think.is_null()) body["think"] = s.think;
  if (!s.keep_alive.empty()) body["keep_alive"] = s.keep_alive;
  if (!s.options.empty()) body["options"] = s.options;
}

int generate_once(ApiClient& client, Session& s, std::string prompt) {
  std::vector<std::string> images;
  if (has(s.capabilities, "vision")) images = take_images(prompt);
  json body{{"model", s.model}, {"prompt", prompt}, {"stream", true}};
  if (!images.empty()) body["images"] = images;
  if (!s.system.empty()) body["system"] = s.system;
  add_common(body, s);
  AnswerPrinter out(s.hide_thinking);
  json done;
  client.stream("/api/generate", body, [&](const json& line) {
    out.thinking(line.value("thinking", ""));
    out.content(line.value("response", ""));
    if (line.contains("tool_calls")) out.tool_calls(line["tool_calls"]);
    if (line.value("done", false)) done = line;
  });
  out.finish();
  if (s.verbose) print_metrics(done);
  return 0;
}

void chat_turn(ApiClient& client, Session& s, std::string text) {
  std::vector<std::string> images;
  if (has(s.capabilities, "vision")) images = take_images(text);
  json user{{"role", "user"}, {"content", text}};
  if (!images.empty()) user["images"] = images;
  s.messages.push_back(std::move(user));
  json messages = json::array();
  if (!s.system.empty()) messages.push_back({{"role", "system"}, {"content", s.system}});
  for (const auto& m : s.messages) messages.push_back(m);
  json body{{"model", s.model}, {"messages", messages}, {"stream", true}};
  add_common(body, s);
  AnswerPrinter out(s.hide_thinking);
  json done;
  try {
    client.stream("/api/chat", body, [&](const json& line) {
      const json msg = line.value("message", json::object());
      out.thinking(msg.value("thinking", ""));
      out.content(msg.value("content", ""));
      if (msg.contains("tool_calls")) out.tool_calls(msg["tool_calls"]);
      if (line.value("done", false)) done = line;
    });
  } catch (...) {
    s.messages.erase(s.messages.end() - 1);  // the turn did not happen
    throw;
  }
  out.finish();
  s.messages.push_back({{"role", "assistant"}, {"content", out.text()}});
  if (s.verbose) print_metrics(done);
}

const char* kHelp =
    "Available Commands:\n"
    "  /set            Set session variables\n"
    "  /show           Show model information\n"
    "  /load <model>   Load a session or model\n"
    "  /save <model>   Save your current session\n"
    "  /clear          Clear session context\n"
    "  /bye            Exit\n"
    "  /?, /help       Help for a command\n\n"
    "Use \"\"\" to begin a multi-line message.\n";

const char* kSetHelp =
    "Available Commands:\n"
    "  /set parameter ...     Set a parameter\n"
    "  /set system <string>   Set system message\n"
    "  /set history           Enable history\n"
    "  /set nohistory         Disable history\n"
    "  /set wordwrap          Enable wordwrap\n"
    "  /set nowordwrap        Disable wordwrap\n"
    "  /set format json       Enable JSON mode\n"
    "  /set noformat          Disable formatting\n"
    "  /set verbose           Show LLM stats\n"
    "  /set quiet             Disable LLM stats\n"
    "  /set think             Enable thinking\n"
    "  /set nothink           Disable thinking\n";

// A typed parameter value as `ollama run`'s /set parameter types it.
json parameter_value(const std::string& key, const std::vector<std::string>& values) {
  if (key == "stop") return values;
  const std::string& v = values.front();
  char* end = nullptr;
  const long long i = std::strtoll(v.c_str(), &end, 10);
  if (*end == '\0') return i;
  const double d = std::strtod(v.c_str(), &end);
  if (*end == '\0') return d;
  if (v == "true" || v == "false") return v == "true";
  return v;
}

void show_section(ApiClient& client, const Session& s, const std::string& what) {
  const json info = json::parse(client.call("POST", "/api/show", json{{"model", s.model}}).body);
  if (what == "info") {
    const json mi = info.value("model_info", json::object());
    const std::string arch = mi.value("general.architecture", "");
    std::cout << "  Model\n    architecture        " << arch << "\n";
    if (mi.contains("general.parameter_count")) {
      std::cout << "    parameters          " << info["details"].value("parameter_size", "")
                << "\n";
    }
    if (mi.contains(arch + ".context_length")) {
      std::cout << "    context length      " << mi[arch + ".context_length"].dump() << "\n";
    }
    if (mi.contains(arch + ".embedding_length")) {
      std::cout << "    embedding length    " << mi[arch + ".embedding_length"].dump() << "\n";
    }
    std::cout << "    quantization        " << info["details"].value("quantization_level", "")
              << "\n\n  Capabilities\n";
    for (const auto& c : info.value("capabilities", json::array())) {
      std::cout << "    " << c.get<std::string>() << "\n";
    }
    std::cout << "\n";
  } else if (what == "license" || what == "modelfile" || what == "parameters" || what == "system" ||
             what == "template") {
    std::string text = what == "system" && !s.system.empty() ? s.system : info.value(what, "");
    if (what == "parameters" && !s.options.empty()) {
      for (const auto& [k, v] : s.options.items()) text += "\n" + k + " " + v.dump();
    }
    std::cout << (text.empty() ? "No " + what + " was specified for this model." : text) << "\n";
  } else {
    std::cout << "Unknown command '/show " << what
              << "'. Type /? for help\n"
                 "Available Commands: /show info, license, modelfile, parameters, system, "
                 "template\n";
  }
}

// One line of the interactive prompt that starts with '/'. Returns false on /bye.
bool command(ApiClient& client, Session& s, const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w{std::istream_iterator<std::string>(in),
                             std::istream_iterator<std::string>()};
  const std::string& cmd = w[0];
  if (cmd == "/bye" || cmd == "/exit") return false;
  if (cmd == "/?" || cmd == "/help") {
    std::cout << (w.size() > 1 && w[1] == "set" ? kSetHelp : kHelp);
  } else if (cmd == "/clear") {
    s.messages = json::array();
    std::cout << "Cleared session context\n";
  } else if (cmd == "/set" && w.size() >= 2) {
    const std::string& what = w[1];
    if (what == "parameter" && w.size() >= 4) {
      s.options[w[2]] = parameter_value(w[2], {w.begin() + 3, w.end()});
      std::cout << "Set parameter '" << w[2] << "' to '" << line.substr(line.find(w[3])) << "'\n";
    } else if (what == "system") {
      const size_t at = line.find("system") + 6;
      s.system = at < line.size() ? line.substr(line.find_first_not_of(' ', at)) : "";
      std::cout << "Set system message.\n";
    } else if (what == "format" && w.size() >= 3) {
      s.format = w[2];
      std::cout << "Set format to '" << s.format << "' mode.\n";
    } else if (what == "noformat") {
      s.format.clear();
      std::cout << "Disabled format.\n";
    } else if (what == "verbose" || what == "quiet") {
      s.verbose = what == "verbose";
      std::cout << "Set '" << what << "' mode.\n";
    } else if (what == "think" || what == "nothink") {
      s.think =
          what == "think" ? json(w.size() >= 3 ? think_value(w[2]) : json(true)) : json(false);
      std::cout << "Set '" << what << "' mode.\n";
    } else if (what == "history" || what == "nohistory" || what == "wordwrap" ||
               what == "nowordwrap") {
      std::cout << "Set '" << what << "' mode.\n";
    } else {
      std::cout << kSetHelp;
    }
  } else if (cmd == "/show") {
    show_section(client, s, w.size() > 1 ? w[1] : "");
  } else if (cmd == "/load" && w.size() >= 2) {
    const json info = show_or_pull(client, w[1], false);
    s.model = w[1];
    s.messages = json::array();
    s.capabilities = info.value("capabilities", std::vector<std::string>{});
    std::cout << "Loading model '" << s.model << "'\n";
    json load{{"model", s.model}};
    add_common(load, s);
    client.call("POST", "/api/generate", load);
  } else if (cmd == "/save" && w.size() >= 2) {
    json create{{"model", w[1]}, {"from", s.model}, {"stream", false}};
    if (!s.system.empty()) create["system"] = s.system;
    if (!s.options.empty()) create["parameters"] = s.options;
    if (!s.messages.empty()) create["messages"] = s.messages;
    client.call("POST", "/api/create", create);
    std::cout << "Created new model '" << w[1] << "'\n";
  } else {
    std::cout << "Unknown command '" << cmd << "'. Type /? for help\n";
  }
  return true;
}

int interactive(ApiClient& client, Session& s, const json& info) {
  json load{{"model", s.model}};
  add_common(load, s);
  client.call("POST", "/api/generate", load);
  for (const auto& m : info.value("messages", json::array())) {
    const std::string role = m.value("role", "");
    if (role == "assistant") std::cout << m.value("content", "") << "\n\n";
    if (role == "user") std::cout << ">>> " << m.value("content", "") << "\n";
    s.messages.push_back(m);
  }
  const bool tty = isatty(STDIN_FILENO);
  std::string line;
  for (;;) {
    if (tty) std::cout << ">>> " << std::flush;
    if (!std::getline(std::cin, line)) break;
    if (line.rfind("\"\"\"", 0) == 0) {  // multi-line until a line ending with """
      std::string text = line.substr(3), more;
      bool closed = text.size() >= 3 && text.compare(text.size() - 3, 3, "\"\"\"") == 0;
      while (!closed) {
        if (tty) std::cout << "... " << std::flush;
        if (!std::getline(std::cin, more)) break;
        text += "\n" + more;
        closed = more.size() >= 3 && more.compare(more.size() - 3, 3, "\"\"\"") == 0;
      }
      if (closed) text.erase(text.size() - 3);
      line = text;
    } else if (!line.empty() && line[0] == '/') {
      try {
        if (!command(client, s, line)) break;
      } catch (const ApiError& e) {
        std::cout << "error: " << e.what() << "\n";
      }
      continue;
    }
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    try {
      chat_turn(client, s, line);
    } catch (const ApiError& e) {
      std::cout << "Error: " << e.what() << "\n";
    } catch (const std::runtime_error& e) {  // an image path that is not a picture
      std::cout << "Error: " << e.what() << "\n";
    }
  }
  return 0;
}

int run(const RunOptions& o) {
  auto client = connected_client();
  const json info = show_or_pull(client, o.model, o.insecure);
  Session s;
  s.model = o.model;
  s.verbose = o.verbose;
  s.hide_thinking = o.hide_thinking;
  s.keep_alive = o.keep_alive;
  s.format = o.format;
  s.capabilities = info.value("capabilities", std::vector<std::string>{});
  s.think = think_value(o.think);
  if (s.think.is_null() && has(s.capabilities, "thinking")) s.think = true;

  std::string prompt;
  for (const auto& p : o.prompt) prompt += (prompt.empty() ? "" : " ") + p;
  if (!isatty(STDIN_FILENO) && o.prompt.empty() == false) {
    const std::string piped{std::istreambuf_iterator<char>(std::cin), {}};
    if (!piped.empty()) prompt = piped + " " + prompt;
  } else if (!isatty(STDIN_FILENO)) {
    // Piped input without a prompt argument is one prompt, as `ollama run m < file`.
    prompt = std::string{std::istreambuf_iterator<char>(std::cin), {}};
    if (prompt.empty()) return interactive(client, s, info);
  }
  if (has(s.capabilities, "embedding")) {
    const json r = json::parse(
        client.call("POST", "/api/embed", json{{"model", o.model}, {"input", prompt}}).body);
    std::cout << r["embeddings"][0].dump() << "\n";
    return 0;
  }
  if (!prompt.empty()) return generate_once(client, s, prompt);
  return interactive(client, s, info);
}

}  // namespace

void add_run_commands(CLI::App& app) {
  {
    auto o = std::make_shared<RunOptions>();
    auto* cmd = app.add_subcommand("run", "Run a model (one prompt, or an interactive chat)");
    cmd->add_option("model", o->model, "Model name")->required();
    cmd->add_option("prompt", o->prompt, "Prompt (else stdin, else interactive)");
    cmd->add_flag("--verbose", o->verbose, "Show timings for the response");
    cmd->add_option("--format", o->format, "Response format (e.g. json)");
    cmd->add_option("--think", o->think, "Thinking: true, false, high, medium, low")
        ->expected(0, 1)
        ->default_str("true");
    cmd->add_flag("--hidethinking", o->hide_thinking, "Hide thinking output");
    cmd->add_option("--keepalive", o->keep_alive, "How long the model stays loaded (e.g. 5m)");
    cmd->add_flag("--insecure", o->insecure, "Use an insecure registry when pulling");
    cmd->add_flag("--nowordwrap", o->no_wordwrap, "Do not wrap words (output is never wrapped)");
    cmd->callback([o, cmd] {
      if (cmd->count("--think") && o->think.empty()) o->think = "true";
      run_command([&] { return run(*o); });
    });
  }
  {
    auto prefix = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("ps", "List running models");
    cmd->add_option("prefix", *prefix, "Only models whose name starts with this");
    cmd->callback([prefix] {
      run_command([&] {
        auto client = connected_client();
        const json ps = json::parse(client.call("GET", "/api/ps").body);
        std::vector<std::vector<std::string>> rows{
            {"NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "UNTIL"}};
        for (const auto& m : ps.value("models", json::array())) {
          const std::string name = m.value("name", "");
          if (!prefix->empty() && name.rfind(*prefix, 0) != 0) continue;
          const uint64_t size = m.value("size", uint64_t{0}),
                         vram = m.value("size_vram", uint64_t{0});
          std::string processor = "100% GPU";
          if (vram == 0) {
            processor = "100% CPU";
          } else if (vram < size) {
            const int gpu = static_cast<int>(100.0 * double(vram) / double(size));
            processor = std::to_string(100 - gpu) + "%/" + std::to_string(gpu) + "% CPU/GPU";
          }
          std::string until = relative_time(m.value("expires_at", ""));
          if (until.find(" ago") != std::string::npos) until = "Stopping...";
          rows.push_back({name, m.value("digest", "").substr(0, 12), human_bytes(size), processor,
                          std::to_string(m.value("context_length", 0)), until});
        }
        print_table(rows);
        return 0;
      });
    });
  }
  {
    auto model = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("stop", "Stop (unload) a running model");
    cmd->add_option("model", *model, "Model name")->required();
    cmd->callback([model] {
      run_command([&] {
        auto client = connected_client();
        const auto shown = client.request("POST", "/api/show", json{{"model", *model}});
        if (shown.status == 404) {
          throw ApiError(404, "couldn't find model \"" + *model + "\" to stop");
        }
        client.call("POST", "/api/generate", json{{"model", *model}, {"keep_alive", 0}});
        return 0;
      });
    });
  }
}

}  // namespace vkllm::cli
