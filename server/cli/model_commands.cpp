// Client commands for the model store, talking HTTP to the server at OLLAMA_HOST like `ollama`:
// pull, push, create, list (ls), show, rm, cp; and import-ollama, which copies an Ollama store
// into ours directly (no server call: Ollama's API has no such operation).
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "registry/blob_store.h"
#include "registry/model_store.h"
#include "registry/modelfile.h"
#include "registry/parameters.h"
#include "registry/sha256.h"
#include "server/cli/api_client.h"
#include "server/cli/cli_output.h"
#include "server/cli/commands.h"
#include "server/cli/progress_display.h"
#include "server/config/settings.h"

namespace vkllm::cli {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// ~ and relative paths (relative to the Modelfile's folder) as `ollama create` resolves them.
fs::path resolve_local(const std::string& value, const fs::path& base) {
  if (value == "~" || value.rfind("~/", 0) == 0) {
    const fs::path home = config::read_store_settings(config::Environment::from_process()).home;
    return home / value.substr(value.size() > 1 ? 2 : 1);
  }
  const fs::path p(value);
  return p.is_absolute() ? p : base / p;
}

// The digest of a local file, uploaded through /api/blobs unless the server has it. A path
// into a blob store (…/blobs/sha256-<hex>[.zst], what `show --modelfile` prints) is used by
// name when the server holds that blob, so saved Modelfiles work without re-uploading.
std::string ensure_blob(ApiClient& client, const fs::path& file, ProgressDisplay& display) {
  const std::string name = file.filename().string();
  if (const auto digest = registry::BlobStore::digest_of_file_name(name)) {
    if (client.request("HEAD", "/api/blobs/" + digest->str()).status == 200) return digest->str();
  }
  if (fs::is_directory(file)) {
    throw std::runtime_error(file.string() +
                             " is a directory; vkllm can only create models from GGUF files");
  }
  registry::Sha256 sha;
  {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + file.string());
    std::vector<char> buf(1 << 20);
    const uint64_t total = fs::file_size(file);
    uint64_t done = 0;
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
      sha.update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
      done += static_cast<uint64_t>(in.gcount());
      display.bytes("hashing " + name, done, total);
    }
  }
  const std::string digest = sha.finish().str();
  if (client.request("HEAD", "/api/blobs/" + digest).status == 200) return digest;
  const auto r = client.upload("/api/blobs/" + digest, file, [&](uint64_t sent, uint64_t total) {
    display.bytes("copying file " + digest.substr(7, 12), sent, total);
  });
  if (r.status != 200 && r.status != 201) throw ApiError(r.status, error_text(r));
  return digest;
}

// DRAFT <model>: the installed model's weights, by the blob its Modelfile's FROM line names.
std::string model_weights_digest(ApiClient& client, const std::string& model) {
  const json body{{"model", model}};
  const auto shown = json::parse(client.call("POST", "/api/show", body).body);
  std::istringstream lines(shown.value("modelfile", ""));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("FROM ", 0) != 0) continue;
    const auto digest =
        registry::BlobStore::digest_of_file_name(fs::path(line.substr(5)).filename().string());
    if (digest) return digest->str();
  }
  throw std::runtime_error("DRAFT " + model + ": the model has no weights layer");
}

json create_request_from_modelfile(ApiClient& client, const std::string& model,
                                   const fs::path& modelfile_path, ProgressDisplay& display) {
  std::ifstream in(modelfile_path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open Modelfile " + modelfile_path.string());
  std::stringstream text;
  text << in.rdbuf();
  const auto mf = registry::Modelfile::parse(text.str());
  const fs::path base = fs::absolute(modelfile_path).parent_path();
  json req;
  req["model"] = model;
  json files = json::object(), adapters = json::object(), drafts = json::object(),
       licenses = json::array(), messages = json::array();
  std::vector<std::pair<std::string, std::string>> params;
  for (const auto& c : mf.commands) {
    if (c.name == "from" || c.name == "adapter") {
      const fs::path local = resolve_local(c.value, base);
      std::error_code ec;
      if (fs::exists(local, ec)) {
        const std::string digest = ensure_blob(client, local, display);
        (c.name == "from" ? files : adapters)[local.filename().string()] = digest;
      } else if (c.name == "from") {
        req["from"] = c.value;
      } else {
        throw std::runtime_error("ADAPTER " + c.value + ": no such file");
      }
    } else if (c.name == "draft") {
      // A GGUF file as Ollama takes it, or (a vkllm extension) an installed model's weights.
      const fs::path local = resolve_local(c.value, base);
      std::error_code ec;
      if (fs::exists(local, ec)) {
        drafts[local.filename().string()] = ensure_blob(client, local, display);
      } else {
        drafts["model.gguf"] = model_weights_digest(client, c.value);
      }
    } else if (c.name == "parameter") {
      params.emplace_back(c.key, c.value);
    } else if (c.name == "template" || c.name == "system" || c.name == "renderer" ||
               c.name == "parser" || c.name == "requires") {
      req[c.name] = c.value;
    } else if (c.name == "license") {
      licenses.push_back(c.value);
    } else if (c.name == "message") {
      messages.push_back({{"role", c.key}, {"content", c.value}});
    }
  }
  if (!files.empty()) req["files"] = files;
  if (!adapters.empty()) req["adapters"] = adapters;
  if (!drafts.empty()) req["draft_files"] = drafts;
  if (!licenses.empty()) req["license"] = licenses;
  if (!messages.empty()) req["messages"] = messages;
  if (!params.empty()) req["parameters"] = json::parse(registry::typed_parameters(params).dump());
  display.finish();
  return req;
}

void print_show(const json& s, bool verbose) {
  const json info = s.value("model_info", json::object());
  const json details = s.value("details", json::object());
  const std::string arch = info.value("general.architecture", details.value("family", ""));
  std::vector<std::vector<std::string>> model_rows;
  auto add_row = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) model_rows.push_back({"    " + k, v});
  };
  add_row("architecture", arch);
  add_row("parameters", details.value("parameter_size", ""));
  auto num = [&](const std::string& key) {
    return info.contains(key) && info[key].is_number() ? std::to_string(info[key].get<uint64_t>())
                                                       : std::string();
  };
  add_row("context length", num(arch + ".context_length"));
  add_row("embedding length", num(arch + ".embedding_length"));
  add_row("quantization", details.value("quantization_level", ""));
  add_row("requires", s.value("requires", ""));
  std::cout << "  Model\n";
  print_table(model_rows);
  if (s.contains("capabilities") && !s["capabilities"].empty()) {
    std::cout << "\n  Capabilities\n";
    for (const auto& c : s["capabilities"]) std::cout << "    " << c.get<std::string>() << "\n";
  }
  const std::string params = s.value("parameters", "");
  if (!params.empty()) {
    std::cout << "\n  Parameters\n";
    std::istringstream lines(params);
    std::string line;
    while (std::getline(lines, line)) std::cout << "    " << line << "\n";
  }
  if (s.contains("system")) {
    std::cout << "\n  System\n";
    std::istringstream lines(s.value("system", ""));
    std::string line;
    for (int i = 0; i < 2 && std::getline(lines, line); ++i) std::cout << "    " << line << "\n";
  }
  if (s.contains("license")) {
    std::cout << "\n  License\n";
    std::istringstream lines(s.value("license", ""));
    std::string line;
    for (int i = 0; i < 2 && std::getline(lines, line); ++i) std::cout << "    " << line << "\n";
  }
  if (verbose) {
    std::cout << "\n  Metadata\n";
    std::vector<std::vector<std::string>> rows;
    for (auto it = info.begin(); it != info.end(); ++it) {
      rows.push_back({"    " + it.key(),
                      it.value().is_string() ? it.value().get<std::string>() : it.value().dump()});
    }
    print_table(rows);
  }
  std::cout << "\n";
}

// `pull` and `push`: one model name and --insecure, streamed progress from `path`.
void add_transfer_command(CLI::App& app, const std::string& verb, const std::string& help,
                          const std::string& model_help, const std::string& path) {
  auto* cmd = app.add_subcommand(verb, help);
  auto model = std::make_shared<std::string>();
  auto insecure = std::make_shared<bool>(false);
  cmd->add_option("model", *model, model_help)->required();
  cmd->add_flag("--insecure", *insecure, "Use an insecure registry (plain HTTP)");
  cmd->callback([model, insecure, path] {
    run_command([&] {
      auto client = connected_client();
      json body;
      body["model"] = *model;
      if (path == "/api/push") body["name"] = *model;  // push also sends the legacy field
      body["insecure"] = *insecure;
      body["stream"] = true;
      return stream_with_progress(client, path, body);
    });
  });
}

}  // namespace

void add_model_commands(CLI::App& app) {
  add_transfer_command(app, "pull", "Pull a model from a registry",
                       "Model name, e.g. llama3.2 or host:port/ns/model:tag", "/api/pull");
  add_transfer_command(app, "push", "Push a model to a registry",
                       "Model name including the registry host and namespace", "/api/push");
  {
    auto* cmd = app.add_subcommand("create", "Create a model from a Modelfile");
    auto model = std::make_shared<std::string>();
    auto file = std::make_shared<std::string>();
    auto quantize = std::make_shared<std::string>();
    auto draft_quantize = std::make_shared<std::string>();
    cmd->add_option("model", *model, "Name of the model to create")->required();
    cmd->add_option("-f,--file", *file, "Modelfile (default: ./Modelfile)");
    cmd->add_option("-q,--quantize", *quantize, "Quantize the model to this type");
    cmd->add_option("--draft-quantize", *draft_quantize, "Quantize the DRAFT model to this type");
    cmd->callback([model, file, quantize, draft_quantize] {
      run_command([&] {
        auto client = connected_client();
        const fs::path path = file->empty() ? fs::path("Modelfile") : fs::path(*file);
        if (!fs::exists(path)) {
          throw std::runtime_error("no Modelfile at " + path.string() + " (give one with -f FILE)");
        }
        ProgressDisplay display;
        json body = create_request_from_modelfile(client, *model, path, display);
        if (!quantize->empty()) body["quantize"] = *quantize;
        if (!draft_quantize->empty()) body["draft_quantize"] = *draft_quantize;
        body["stream"] = true;
        client.stream("/api/create", body, [&](const json& line) { display.update(line); });
        display.finish();
        return 0;
      });
    });
  }
  {
    auto* cmd = app.add_subcommand("list", "List models");
    cmd->alias("ls");
    auto prefix = std::make_shared<std::string>();
    cmd->add_option("prefix", *prefix, "Only models whose name starts with this");
    cmd->callback([prefix] {
      run_command([&] {
        auto client = connected_client();
        const auto tags = json::parse(client.call("GET", "/api/tags").body);
        std::vector<std::vector<std::string>> rows{{"NAME", "ID", "SIZE", "MODIFIED"}};
        auto lower = [](std::string s) {
          for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          return s;
        };
        for (const auto& m : tags.value("models", json::array())) {
          const std::string name = m.value("name", "");
          if (!prefix->empty() && lower(name).rfind(lower(*prefix), 0) != 0) continue;
          rows.push_back({name, m.value("digest", "").substr(0, 12),
                          human_bytes(m.value("size", uint64_t{0})),
                          relative_time(m.value("modified_at", ""))});
        }
        print_table(rows);
        return 0;
      });
    });
  }
  {
    auto* cmd = app.add_subcommand("show", "Show information for a model");
    auto model = std::make_shared<std::string>();
    auto flags = std::make_shared<std::map<std::string, bool>>();
    auto verbose = std::make_shared<bool>(false);
    cmd->add_option("model", *model, "Model name")->required();
    for (const char* f : {"license", "modelfile", "parameters", "system", "template"}) {
      cmd->add_flag(std::string("--") + f, (*flags)[f], std::string("Show the model's ") + f);
    }
    cmd->add_flag("-v,--verbose", *verbose, "Show detailed model information");
    cmd->callback([model, flags, verbose] {
      run_command([&] {
        std::string which;
        for (const auto& [k, v] : *flags) {
          if (!v) continue;
          if (!which.empty())
            throw std::runtime_error(
                "only one of --license, --modelfile, "
                "--parameters, --system, --template");
          which = k;
        }
        auto client = connected_client();
        json body;
        body["model"] = *model;
        body["name"] = *model;
        body["verbose"] = *verbose;
        const auto shown = json::parse(client.call("POST", "/api/show", body).body);
        if (which.empty()) {
          print_show(shown, *verbose);
        } else {
          const std::string text = shown.value(which, "");
          std::cout << text << (text.empty() || text.back() == '\n' ? "" : "\n");
        }
        return 0;
      });
    });
  }
  {
    auto* cmd = app.add_subcommand("rm", "Remove models");
    auto models = std::make_shared<std::vector<std::string>>();
    cmd->add_option("models", *models, "Model names")->required();
    cmd->callback([models] {
      run_command([&] {
        auto client = connected_client();
        for (const auto& m : *models) {
          json body;
          body["model"] = m;
          client.call("DELETE", "/api/delete", body);
          std::cout << "deleted '" << m << "'\n";
        }
        return 0;
      });
    });
  }
  {
    auto* cmd = app.add_subcommand("cp", "Copy a model");
    auto src = std::make_shared<std::string>();
    auto dst = std::make_shared<std::string>();
    cmd->add_option("source", *src, "Existing model")->required();
    cmd->add_option("destination", *dst, "New name")->required();
    cmd->callback([src, dst] {
      run_command([&] {
        auto client = connected_client();
        json body;
        body["source"] = *src;
        body["destination"] = *dst;
        client.call("POST", "/api/copy", body);
        std::cout << "copied '" << *src << "' to '" << *dst << "'\n";
        return 0;
      });
    });
  }
  {
    auto* cmd = app.add_subcommand(
        "import-ollama",
        "Copy every model of an Ollama store (default ~/.ollama/models) into vkllm's store "
        "(OLLAMA_MODELS)");
    auto dir = std::make_shared<std::string>();
    cmd->add_option("dir", *dir, "Ollama models folder (holding manifests/ and blobs/)");
    cmd->callback([dir] {
      run_command([&] {
        const config::StoreSettings where =
            config::read_store_settings(config::Environment::from_process());
        const fs::path from = dir->empty() ? where.ollama_root : fs::path(*dir);
        if (!fs::is_directory(from / "manifests")) {
          throw std::runtime_error(from.string() +
                                   " is not an Ollama models folder (no "
                                   "manifests/ inside)");
        }
        registry::ModelStore store(where.root);
        store.set_prune(where.prune);
        store.claim_sole_writer();  // not beside a server writing the same store
        const auto report = store.import_ollama_store(
            from, [](const std::string& status) { std::cerr << status << "\n"; });
        for (const auto& m : report.models) std::cout << "imported " << m << "\n";
        for (const auto& f : report.failures) std::cerr << "failed: " << f << "\n";
        std::cout << report.models.size() << " models imported (" << report.blobs_copied
                  << " blobs copied, " << report.blobs_skipped << " already present)\n";
        return report.failures.empty() ? 0 : 1;
      });
    });
  }
}

}  // namespace vkllm::cli
