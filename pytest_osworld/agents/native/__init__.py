"""Native computer-use runners: each speaks a provider's own protocol (docs/agents.md#native-computer-use-runners).

``anthropic-computer`` (Anthropic's computer tool), ``openai-computer`` (OpenAI's computer_use_preview),
``tool-calling`` (one ``computer`` function on any OpenAI-compatible chat endpoint) and ``uitars``
(UI-TARS / Qwen-VL's action grammar). What they share is in :mod:`.loop` (the step, the answers owed
to tool calls, the endings), :mod:`.actions` (a neutral action and its pyautogui code), :mod:`.keys`
and :mod:`.images`.
"""
