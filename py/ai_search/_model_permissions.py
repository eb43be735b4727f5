"""Who may list the provider's models and pick one: upstream's rule for ``ai.llm.models``, the same
for the server (which enforces it) and the page (which asks it first, so that nobody else sends a
request that can only be refused). ``_model_list`` parses and sorts the list itself.

A page module (``ai_search.PAGE_MODULES``): it follows the convention of ``_portable``.
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Set

__all__ = ["MODEL_SETTING_PERMISSION", "may_list_models"]

# The per-setting permission that, with manage-selected-settings, lets a user pick the model
# (upstream's change-setting-AI_LLM_OpenAI_Model, named after the server's llm_model setting).
MODEL_SETTING_PERMISSION = "change-setting-llm_model"
_PRIVILEGED_SETTING_PERMISSIONS = frozenset({"view-privileged-setting", "edit-privileged-setting"})
_SELECTED_SETTING_PERMISSIONS = frozenset({"manage-selected-settings", MODEL_SETTING_PERMISSION})


def may_list_models(permissions: "Set[str]") -> bool:
    """Who may list the provider's models and pick one (upstream's rule for ``ai.llm.models``): a
    privileged-setting permission, or both manage-selected-settings and the model setting's own.

    The server enforces it; the page asks it first, so that nobody else sends a request that can
    only be refused.
    """
    return any(name in permissions for name in _PRIVILEGED_SETTING_PERMISSIONS) or all(
        name in permissions for name in _SELECTED_SETTING_PERMISSIONS
    )
