#!/usr/bin/env python3
"""Writes tests/unit/prompt/testdata/lfm2/renderer_cases.json: the conversations of Ollama's LFM2
renderer tests (model/renderers/lfm2_test.go, TestLFM2Renderer_ChatTemplateParity and the
[img] tag case) with the prompts those tests state, the leading <|startoftext|> left out (vkllm's
renderer leaves BOS to the tokenizer, as Ollama strips it when the tokenizer adds it). Two cases
of our own (nested arguments; tool JSON with HTML characters, which Ollama's encoder does not
escape) follow Ollama's code (model/renderers/lfm2.go lfm2JSON, lfm2RenderToolCalls).

Re-record: python3 tests/reference/tools/lfm2_renderer_cases.py
"""
import json
import os

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "unit", "prompt", "testdata", "lfm2", "renderer_cases.json")


def tool(name, desc=None, params=None):
    fn = {"name": name}
    if desc:
        fn["description"] = desc
    fn["parameters"] = params or {"type": "object"}
    return {"type": "function", "function": fn}


def user(t):
    return {"role": "user", "content": t}


def asst(content, thinking=None, calls=None):
    m = {"role": "assistant", "content": content}
    if thinking:
        m["thinking"] = thinking
    if calls:
        m["tool_calls"] = [{"function": {"name": n, "arguments": a}} for n, a in calls]
    return m


PARIS = [("get_weather", {"location": "Paris"})]
QA = [user("Q1"), asst("<think>reason1</think>A1"), user("Q2"), asst("<think>reason2</think>A2")]
QA_FIELD = [user("Q1"), asst("A1", "reason1"), user("Q2"), asst("A2", "reason2")]
END = "<|im_end|>\n"

# (name, renderer, messages, tools, think, prompt)
CASES = [
    ("user_only", "lfm2", [user("Hello")], None, False,
     "<|im_start|>user\nHello" + END + "<|im_start|>assistant\n"),
    ("system_and_user", "lfm2", [{"role": "system", "content": "You are helpful."}, user("Hi")], None, False,
     "<|im_start|>system\nYou are helpful." + END + "<|im_start|>user\nHi" + END + "<|im_start|>assistant\n"),
    ("tools_without_system", "lfm2", [user("Use tools")], [tool("get_weather")], False,
     "<|im_start|>system\nList of tools: <|tool_list_start|>[{\"name\": \"get_weather\", \"parameters\": "
     "{\"type\": \"object\", \"properties\": null}}]<|tool_list_end|>" + END +
     "<|im_start|>user\nUse tools" + END + "<|im_start|>assistant\n"),
    ("first_system_combined_with_tools", "lfm2",
     [{"role": "system", "content": "Follow instructions."}, user("Do work")], [tool("tool_a"), tool("tool_b")], False,
     "<|im_start|>system\nFollow instructions.\nList of tools: <|tool_list_start|>[{\"name\": \"tool_a\", "
     "\"parameters\": {\"type\": \"object\", \"properties\": null}}, {\"name\": \"tool_b\", \"parameters\": "
     "{\"type\": \"object\", \"properties\": null}}]<|tool_list_end|>" + END +
     "<|im_start|>user\nDo work" + END + "<|im_start|>assistant\n"),
    ("assistant_tool_calls_and_tool_responses_are_rendered", "lfm2",
     [user("Call a tool"), asst("", calls=PARIS), {"role": "tool", "content": "22C"}], None, False,
     "<|im_start|>user\nCall a tool" + END + "<|im_start|>assistant\n<|tool_call_start|>[get_weather("
     "location=\"Paris\")]<|tool_call_end|>" + END + "<|im_start|>tool\n<|tool_response_start|>22C"
     "<|tool_response_end|>" + END + "<|im_start|>assistant\n"),
    ("assistant_tool_calls_with_content_preserves_both", "lfm2",
     [user("Call a tool"), asst("Checking now.", calls=PARIS)], None, False,
     "<|im_start|>user\nCall a tool" + END + "<|im_start|>assistant\n<|tool_call_start|>[get_weather("
     "location=\"Paris\")]<|tool_call_end|>\nChecking now."),
    ("thinking_strips_non_last_assistant_when_disabled", "lfm2-thinking", QA, None, False,
     "<|im_start|>user\nQ1" + END + "<|im_start|>assistant\nA1" + END + "<|im_start|>user\nQ2" + END +
     "<|im_start|>assistant\n<think>reason2</think>A2"),
    ("thinking_preserves_past_assistant_when_enabled", "lfm2-thinking", QA, None, True,
     "<|im_start|>user\nQ1" + END + "<|im_start|>assistant\n<think>reason1</think>A1" + END +
     "<|im_start|>user\nQ2" + END + "<|im_start|>assistant\n<think>reason2</think>A2"),
    ("thinking_field_reconstructed_when_enabled", "lfm2-thinking", QA_FIELD, None, True,
     "<|im_start|>user\nQ1" + END + "<|im_start|>assistant\n<think>reason1</think>A1" + END +
     "<|im_start|>user\nQ2" + END + "<|im_start|>assistant\n<think>reason2</think>A2"),
    ("thinking_field_stripped_for_non_last_when_disabled", "lfm2-thinking", QA_FIELD, None, False,
     "<|im_start|>user\nQ1" + END + "<|im_start|>assistant\nA1" + END + "<|im_start|>user\nQ2" + END +
     "<|im_start|>assistant\n<think>reason2</think>A2"),
    ("thinking_precedes_tool_calls", "lfm2-thinking",
     [user("Weather?"), asst("", "Let me check the weather.", PARIS), {"role": "tool", "content": "22C"}], None, True,
     "<|im_start|>user\nWeather?" + END + "<|im_start|>assistant\n<think>Let me check the weather.</think>"
     "<|tool_call_start|>[get_weather(location=\"Paris\")]<|tool_call_end|>" + END +
     "<|im_start|>tool\n<|tool_response_start|>22C<|tool_response_end|>" + END + "<|im_start|>assistant\n"),
    ("direct_answer_history_has_no_think_tags", "lfm2-thinking", [user("Q1"), asst("A1"), user("Q2")], None, True,
     "<|im_start|>user\nQ1" + END + "<|im_start|>assistant\nA1" + END + "<|im_start|>user\nQ2" + END +
     "<|im_start|>assistant\n"),
    ("non_thinking_renderer_drops_thinking_metadata_on_prefill", "lfm2",
     [user("Hi"), asst("Hello", "some reasoning")], None, False,
     "<|im_start|>user\nHi" + END + "<|im_start|>assistant\nHello"),
    ("arbitrary_roles_are_rendered_verbatim", "lfm2", [{"role": "developer", "content": "Do X"}, user("Hi")], None, False,
     "<|im_start|>developer\nDo X" + END + "<|im_start|>user\nHi" + END + "<|im_start|>assistant\n"),
    ("empty_messages_still_add_generation_prompt", "lfm2", [], None, False, "<|im_start|>assistant\n"),
    ("assistant_prefill_no_generation_prompt", "lfm2", [user("Hi"), asst("Hello")], None, False,
     "<|im_start|>user\nHi" + END + "<|im_start|>assistant\nHello"),
    ("single_image_img_tag_placeholder", "lfm2",
     [{"role": "user", "content": "Describe this image.", "images": ["aW1nMQ=="]}], None, None,
     "<|im_start|>user\n[img-0] Describe this image." + END + "<|im_start|>assistant\n"),
    # Our own, from lfm2.go: arguments as JSON with sorted keys and json.dumps spacing, calls joined by
    # ",", HTML characters unescaped, a described tool with typed properties in Ollama's field order; the
# conversation ends in the assistant's calls, which is continued (no <|im_end|>, no new turn).
    ("nested_arguments_and_html", "lfm2",
     [user("Go"), asst("", calls=[("run", {"z": [1, 2.5], "a": {"y": "<b>", "x": None}}), ("stop", {})])],
     [tool("run", "Run <it> & more", {"type": "object", "required": ["a"],
                                       "properties": {"a": {"type": "object", "description": "A"},
                                                      "z": {"type": ["array", "null"]}}})], False,
     "<|im_start|>system\nList of tools: <|tool_list_start|>[{\"name\": \"run\", \"description\": "
     "\"Run <it> & more\", \"parameters\": {\"type\": \"object\", \"required\": [\"a\"], \"properties\": "
     "{\"a\": {\"type\": \"object\", \"description\": \"A\"}, \"z\": {\"type\": [\"array\", \"null\"]}}}}]"
     "<|tool_list_end|>" + END + "<|im_start|>user\nGo" + END + "<|im_start|>assistant\n<|tool_call_start|>"
     "[run(a={\"x\": null, \"y\": \"<b>\"},z=[1, 2.5]),stop()]<|tool_call_end|>"),
]


def main():
    cases = []
    for name, renderer, messages, tools, think, prompt in CASES:
        req = {"messages": messages}
        if tools:
            req["tools"] = tools
        if think is not None:
            req["think"] = think
        cases.append({"name": name, "renderer": renderer, "source": "ollama", "request": req, "prompt": prompt})
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(cases, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(cases)} cases")


if __name__ == "__main__":
    main()
