"""The fields both doors answer a file operation with: aiod's objects, which the MCP tools send
whole and the REST routes (AIO's) send as their ``data``. The files plane returns typed records;
this is the one place they become these fields."""

from __future__ import annotations

from typing import Any

from ...planes.files import EditorResult, FileOperationError, FileResult
from ...planes.files import results as records


def action_fields(result: FileResult) -> dict[str, Any]:
    """An action's result as aiod's object has it, without ``action`` and ``success``."""
    match result:
        case records.FileRead():
            return {"path": result.path, "content": result.content}
        case records.FileWritten():
            return {"path": result.path, "bytes_written": result.bytes_written}
        case records.FileReplaced():
            return {"path": result.path, "replaced_count": result.replaced_count}
        case records.FileSearch():
            return {
                "path": result.path,
                "matches": list(result.matches),
                "line_numbers": list(result.line_numbers),
                "match_count": result.match_count,
            }
        case records.FoundFiles():
            return {
                "path": result.path,
                "files": list(result.files),
                "file_count": result.file_count,
                "truncated": result.truncated,
            }
        case records.DirectoryListing():
            return {
                "path": result.path,
                "files": [
                    {
                        "name": entry.name,
                        "path": entry.path,
                        "is_directory": entry.is_directory,
                        "size": entry.size,
                        "modified_time": entry.modified_time,
                        "permissions": entry.permissions,
                        "extension": entry.extension,
                    }
                    for entry in result.files
                ],
                "total_count": result.total_count,
                "directory_count": result.directory_count,
                "file_count": result.file_count,
                "truncated": result.truncated,
            }
        case records.GrepResult():
            return {
                "path": result.path,
                "pattern": result.pattern,
                "matches": [_grep_match(match) for match in result.matches],
                "match_count": result.match_count,
                "files_searched": result.files_searched,
                "files_matched": result.files_matched,
                "truncated": result.truncated,
            }
        case records.GlobResult():
            return {
                "path": result.path,
                "pattern": result.pattern,
                "files": [_glob_entry(entry) for entry in result.files],
                "total_count": result.total_count,
                "truncated": result.truncated,
            }


def _grep_match(match: records.GrepMatch) -> dict[str, Any]:
    item: dict[str, Any] = {"file": match.file, "line_number": match.line_number, "line_content": match.line_content}
    if match.context_before is not None:
        item["context_before"] = list(match.context_before)
    if match.context_after is not None:
        item["context_after"] = list(match.context_after)
    return item


def _glob_entry(entry: records.GlobEntry) -> dict[str, Any]:
    item: dict[str, Any] = {"path": entry.path, "name": entry.name}
    if entry.metadata is not None:
        item["is_directory"] = entry.metadata.is_directory
        item["size"] = entry.metadata.size
        item["modified_time"] = entry.metadata.modified_time
    return item


def error_fields(error: FileOperationError) -> dict[str, Any]:
    """aiod's structured error: what the ``error`` of a failure object and REST's failure data hold."""
    return {
        "errno": error.errno,
        "errno_name": error.errno_name,
        "error_type": error.error_type.value,
        "exception_type": error.exception_type,
        "message": error.message,
        "operation": error.operation,
        "path": error.path,
        "retryable": error.retryable,
    }


def editor_object(result: EditorResult) -> dict[str, Any]:
    """AIO 1.x's editor object (``StrReplaceEditorResult`` plus ``command`` and ``success``), which
    the REST route answers with too."""
    return {
        "command": result.command,
        "path": result.path,
        "output": result.output,
        "prev_exist": result.prev_exist,
        "error": result.error,
        "old_content": result.old_content,
        "new_content": result.new_content,
        "success": result.success,
    }
