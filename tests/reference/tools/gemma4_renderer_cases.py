#!/usr/bin/env python3
"""Records tests/unit/prompt/testdata/gemma4/renderer_cases.json: the conversations of Ollama's
Gemma 4 renderer tests (model/renderers/gemma4_reference_test.go) with the prompt each must give.

Cases marked "jinja" take their prompt from Google's chat template itself, rendered by Python's
jinja2 as Ollama's VERIFY_JINJA2 check does (testdata/gemma4/gemma4_e2b.jinja for the renderer
"gemma4", gemma4_31b.jinja for "gemma4-large"; the leading <bos> is left out as vkllm's renderer
leaves it to the tokenizer). Cases marked "ollama" are where Ollama's renderer knowingly differs
from the template; their prompt is the one Ollama's test states.

Re-record: python3 tests/reference/tools/gemma4_renderer_cases.py  (needs jinja2)
"""
import json
import os

from jinja2 import Environment

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "unit", "prompt", "testdata", "gemma4")
TEMPLATES = {"gemma4": "gemma4_e2b.jinja", "gemma4-large": "gemma4_31b.jinja"}
Q = '<|"|>'


def tool(name, desc, props=None, required=None, ptype="object"):
    params = {"type": ptype}
    if required:
        params["required"] = required
    if props is not None:
        params["properties"] = props
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": params}}


BASH = tool("bash", "Run a command", {"command": {"type": "string", "description": "The command"}}, ["command"])
READ = tool("read", "Read a file", {"path": {"type": "string", "description": "File path"}}, ["path"])
BASH_SMALL = tool("bash", "Run", {"command": {"type": "string", "description": "Cmd"}}, ["command"])
WEATHER = tool("get_weather", "Get weather", {"city": {"type": "string", "description": "City"}})
ADD = tool("add", "Add numbers", {"a": {"type": "number"}, "b": {"type": "number"}})
MODE = tool("set_mode", "Set mode", {"mode": {"type": "string", "description": "The mode", "enum": ["fast", "slow"]}})
NESTED = tool("create", "Create item", {
    "name": {"type": "string", "description": "Name"},
    "config": {"type": "object", "description": "Config",
               "properties": {"enabled": {"type": "boolean", "description": "On/off"}}}})
ARRAY = tool("batch", "Run batch", {"commands": {"type": "array", "description": "Commands", "items": {"type": "string"}}})
UNION = tool("maybe_name", "Test nullable union", {"name": {"type": ["string", "null"], "description": "Name"}})
ANYOF = tool("pick_value", "Pick a value", {"value": {"anyOf": [{"type": "string"}, {"type": "number"}], "description": "Value"}})
CONFIGURE = tool("configure", "Configure", {"config": {"type": "object", "description": "Config"}})
NESTED_REQUIRED = tool("create_user", "Create user", {"profile": {
    "type": "object", "description": "Profile", "required": ["name"],
    "properties": {"name": {"type": "string", "description": "Name"},
                   "age": {"type": "number", "description": "Age"}}}})
RAW = tool("raw", "Raw input")
ARRAY_OBJECTS = tool("upsert_batch", "Upsert batch", {"entries": {
    "type": "array", "description": "Entries",
    "items": {"type": "object", "required": ["id"], "properties": {
        "id": {"type": "string", "description": "ID"},
        "count": {"type": "number", "description": "Count"}}}}})
ARRAY_NESTED = tool("plan_batch", "Plan batch", {"steps": {
    "type": "array", "description": "Steps",
    "items": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "description": "Name"},
        "config": {"type": "object", "description": "Config", "required": ["enabled"],
                   "properties": {"enabled": {"type": "boolean", "description": "Enabled"}}},
        "tags": {"type": "array", "description": "Tags", "items": {"type": "string"}}}}}})
ARRAY_UNION = tool("maybe_batch", "Maybe batch", {"values": {
    "type": "array", "description": "Values", "items": {"type": ["string", "null"]}}})
ARRAY_NULLABLE = tool("annotate_batch", "Annotate batch", {"entries": {
    "type": "array", "description": "Entries",
    "items": {"type": "object", "required": ["note"], "properties": {
        "note": {"type": "string", "description": "Note", "nullable": True},
        "metadata": {"type": "object", "description": "Metadata", "nullable": True,
                     "properties": {"tag": {"type": "string", "description": "Tag"}}}}}}})
ARRAY_EXTRA = tool("configure_batch", "Configure batch", {"settings": {
    "type": "array", "description": "Settings",
    "items": {"type": "object", "additionalProperties": False, "default": {"mode": "auto"},
              "nullable": True, "required": ["mode"],
              "properties": {"mode": {"type": "string", "description": "Mode"}}}}})


def user(text):
    return {"role": "user", "content": text}


def call(name, args, id=None):
    c = {"function": {"name": name, "arguments": args}}
    if id:
        c["id"] = id
    return c


def asst(content="", calls=None, thinking=None):
    m = {"role": "assistant", "content": content}
    if thinking:
        m["thinking"] = thinking
    if calls:
        m["tool_calls"] = calls
    return m


def tool_result(content, name=None, id=None):
    m = {"role": "tool", "content": content}
    if name:
        m["tool_name"] = name
    if id:
        m["tool_call_id"] = id
    return m


SYS = {"role": "system", "content": "You are helpful."}
LS = call("bash", {"command": "ls"})

# (name, messages, tools, think, renderers)
CASES = [
    ("user_only", [user("Hello")], None, None, ["gemma4", "gemma4-large"]),
    ("system_user", [SYS, user("Hi")], None, None, ["gemma4", "gemma4-large"]),
    ("developer_user", [{"role": "developer", "content": "You are helpful."}, user("Hi")], None, None, ["gemma4"]),
    ("tools_no_system", [user("Hi")], [BASH], None, ["gemma4"]),
    ("thinking_system_tools", [SYS, user("Hi")], [BASH], True, ["gemma4", "gemma4-large"]),
    ("developer_tools_thinking_trimmed",
     [{"role": "developer", "content": "  Prefer terse answers.\nUse tools when needed.  "}, user("Hi")],
     [BASH, READ], True, ["gemma4"]),
    ("thinking_explicitly_disabled", [user("Hi")], None, False, ["gemma4", "gemma4-large"]),
    ("multi_turn", [SYS, user("Hi"), asst("Hello!"), user("More")], None, None, ["gemma4", "gemma4-large"]),
    ("tool_call_response", [SYS, user("List files"), asst(calls=[LS]), tool_result("file1.txt\nfile2.txt", "bash")],
     [BASH], None, ["gemma4", "gemma4-large"]),
    ("tool_call_pending_response", [SYS, user("List files"), asst("Let me check.", [LS])], [BASH], None, ["gemma4"]),
    ("full_round_trip",
     [SYS, user("List files"), asst(calls=[LS]), tool_result("file1.txt\nfile2.txt", "bash"),
      asst("Here are the files."), user("Read file1.txt")], [BASH, READ], None, ["gemma4"]),
    ("multiple_tool_calls_with_thinking_ids_and_continuation",
     [{"role": "system", "content": "You are a coding assistant."}, user("List files, then read config."),
      asst(calls=[call("bash", {"command": "ls -la"}, "call_bash"), call("read", {"path": "config.json"}, "call_read")],
           thinking="Need the directory listing before reading the config."),
      tool_result('{"debug": true}', id="call_read"), tool_result("config.json\nmain.go", id="call_bash"),
      asst("Config loaded.")], [BASH, READ], True, ["gemma4"]),
    ("strip_thinking_history",
     [user("What is 2+2?"), asst("<|channel>thought\nThinking...<channel|>4"), user("And 3+3?")], None, None, ["gemma4"]),
    ("numeric_arguments", [user("Add"), asst(calls=[call("add", {"a": 1, "b": 2})]), tool_result('{"result": 3}', "add")],
     [ADD], None, ["gemma4"]),
    ("mixed_arguments",
     [user("Go"), asst(calls=[call("bash", {"zzz": "last", "flag": True, "ratio": 0.5, "none": None,
                                             "list": [1, "two", False], "map": {"b": 1, "a": "x"}})]),
      tool_result("ok", "bash")], [BASH_SMALL], None, ["gemma4"]),
    ("tool_with_enum", [user("Test")], [MODE], None, ["gemma4"]),
    ("json_tool_response_then_user",
     [user("Weather?"), asst(calls=[call("get_weather", {"city": "Tokyo"})]),
      tool_result('{"temperature": 15, "weather": "sunny"}', "get_weather"), user("Thanks!")], [WEATHER], None, ["gemma4"]),
    ("adjacent_assistants_continue_same_model_turn",
     [user("Start"), asst("One."), asst("Two."), user("More")], None, None, ["gemma4", "gemma4-large"]),
    ("user_content_trimmed", [user("  hello  ")], None, None, ["gemma4"]),
    ("nested_object_tool", [user("Create")], [NESTED], None, ["gemma4"]),
    ("array_tool", [user("Batch")], [ARRAY], None, ["gemma4"]),
    ("typed_property_union_type", [user("Hi")], [UNION], None, ["gemma4"]),
    ("object_without_properties", [user("Go")], [CONFIGURE, RAW], None, ["gemma4"]),
    ("nested_object_with_required", [user("Create")], [NESTED_REQUIRED], None, ["gemma4"]),
    ("thinking_in_last_assistant", [user("Hi"), asst("Hello!", thinking="The user greets me.")], None, True, ["gemma4"]),
    ("thinking_field_ignored_before_later_user",
     [user("List files"), asst("Let me check.", [LS], "I should use bash"), tool_result("file1.txt", "bash"),
      user("Thanks")], [BASH], None, ["gemma4", "gemma4-large"]),
    ("adjacent_assistants_after_tool_response_continue_same_model_turn",
     [user("Go"), asst(calls=[LS]), tool_result("file1.txt", "bash"), asst("First."), asst("Second."), user("Next")],
     [BASH_SMALL], None, ["gemma4", "gemma4-large"]),
    ("thinking_enabled_with_pending_tool_call",
     [SYS, user("List files"), asst(calls=[LS], thinking="Use bash")], [BASH_SMALL], True, ["gemma4", "gemma4-large"]),
    ("terminal_tool_response_adds_thinking_cue_when_thinking_enabled",
     [user("List files"), asst(calls=[LS]), tool_result("file1.txt", "bash")], [BASH_SMALL], True, ["gemma4"]),
    ("array_items_object_with_required", [user("Upsert entries")], [ARRAY_OBJECTS], None, ["gemma4"]),
    ("array_items_object_with_nested_object_and_array_properties", [user("Plan steps")], [ARRAY_NESTED], None, ["gemma4"]),
    ("array_items_union_type", [user("Maybe batch")], [ARRAY_UNION], None, ["gemma4"]),
    ("array_items_nested_nullable_properties", [user("Annotate batch")], [ARRAY_NULLABLE], None, ["gemma4"]),
    ("array_items_extra_keys", [user("Configure batch")], [ARRAY_EXTRA], None, ["gemma4"]),
]

BASH_DECL = ("<|tool>declaration:bash{description:" + Q + "Run a command" + Q + ",parameters:{properties:{command:"
             "{description:" + Q + "The command" + Q + ",type:" + Q + "STRING" + Q + "}},required:[" + Q + "command" +
             Q + "],type:" + Q + "OBJECT" + Q + "}}<tool|>")
READ_DECL = ("<|tool>declaration:read{description:" + Q + "Read a file" + Q + ",parameters:{properties:{path:"
             "{description:" + Q + "File path" + Q + ",type:" + Q + "STRING" + Q + "}},required:[" + Q + "path" + Q +
             "],type:" + Q + "OBJECT" + Q + "}}<tool|>")
TWO_CALLS = asst(calls=[LS, call("read", {"path": "go.mod"})])

# Where Ollama's renderer differs from the template on purpose (its tests' expectations).
OLLAMA_CASES = [
    ("multiple_tool_calls",
     [SYS, user("List and read"), TWO_CALLS, tool_result("file1.txt\nfile2.txt", "bash"),
      tool_result("module example.com/foo", "read")], [BASH, READ], None, "gemma4",
     "<|turn>system\nYou are helpful." + BASH_DECL + READ_DECL + "<turn|>\n<|turn>user\nList and read<turn|>\n"
     "<|turn>model\n<|tool_call>call:bash{command:" + Q + "ls" + Q + "}<tool_call|><|tool_call>call:read{path:" + Q +
     "go.mod" + Q + "}<tool_call|><|tool_response>response:bash{value:" + Q + "file1.txt\nfile2.txt" + Q +
     "}<tool_response|><|tool_response>response:read{value:" + Q + "module example.com/foo" + Q + "}<tool_response|>"),
    ("typed_property_anyof", [user("Pick")], [ANYOF], None, "gemma4",
     "<|turn>system\n<|tool>declaration:pick_value{description:" + Q + "Pick a value" + Q +
     ",parameters:{properties:{value:{description:" + Q + "Value" + Q + ",type:" + Q + "['STRING', 'NUMBER']" + Q +
     "}},type:" + Q + "OBJECT" + Q + "}}<tool|><turn|>\n<|turn>user\nPick<turn|>\n<|turn>model\n"),
    ("tool_response_without_name_or_id_uses_unknown",
     [user("List and read"), TWO_CALLS, tool_result("payload")], [BASH, READ], None, "gemma4",
     "<|turn>system\n" + BASH_DECL + READ_DECL + "<turn|>\n<|turn>user\nList and read<turn|>\n"
     "<|turn>model\n<|tool_call>call:bash{command:" + Q + "ls" + Q + "}<tool_call|><|tool_call>call:read{path:" + Q +
     "go.mod" + Q + "}<tool_call|><|tool_response>response:unknown{value:" + Q + "payload" + Q + "}<tool_response|>"),
]


def jinja_messages(messages):
    out = []
    for m in messages:
        j = {"role": m["role"], "content": m.get("content", "")}
        if m.get("thinking"):
            j["reasoning"] = m["thinking"]
        if m.get("tool_calls"):
            j["tool_calls"] = [({"id": c["id"]} if c.get("id") else {}) | {"function": c["function"]}
                               for c in m["tool_calls"]]
        if m.get("tool_name"):
            j["name"] = m["tool_name"]
        if m.get("tool_call_id"):
            j["tool_call_id"] = m["tool_call_id"]
        out.append(j)
    return out


def render(renderer, messages, tools, think):
    with open(os.path.join(ROOT, TEMPLATES[renderer])) as f:
        tmpl = Environment().from_string(f.read())
    kwargs = {"messages": jinja_messages(messages), "bos_token": "<bos>", "add_generation_prompt": True}
    if tools:
        kwargs["tools"] = tools
    if think:
        kwargs["enable_thinking"] = True
    text = tmpl.render(**kwargs)
    assert text.startswith("<bos>")
    return text[len("<bos>"):]


def request(messages, tools, think):
    body = {"messages": messages}
    if tools:
        body["tools"] = tools
    if think is not None:
        body["think"] = think
    return body


def main():
    cases = []
    for name, messages, tools, think, renderers in CASES:
        for r in renderers:
            cases.append({"name": name, "renderer": r, "source": "jinja",
                          "request": request(messages, tools, think), "prompt": render(r, messages, tools, think)})
    for name, messages, tools, think, r, prompt in OLLAMA_CASES:
        cases.append({"name": name, "renderer": r, "source": "ollama",
                      "request": request(messages, tools, think), "prompt": prompt})
    with open(os.path.join(ROOT, "renderer_cases.json"), "w") as f:
        json.dump(cases, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(cases)} cases")


if __name__ == "__main__":
    main()
