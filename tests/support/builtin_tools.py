"""The gateway's built-in tools in the order docs/mcp-tools.md publishes them (before any upstream's)."""

BUILTIN_TOOLS = [
    "sandbox_execute_bash",
    "sandbox_execute_code",
    "sandbox_file_operations",
    "sandbox_str_replace_editor",
    "sandbox_get_context",
    "sandbox_get_packages",
    "sandbox_load_skill",
    "browser_get_info",
    "browser_gui_screenshot",
    "browser_gui_execute_action",
    "computer_accessibility_nodes",
    "computer_execute_actions",
    "sandbox_open_terminal",
]
