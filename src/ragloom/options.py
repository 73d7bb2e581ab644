"""How settings are declared: one pydantic base for a component's ``Options`` and for every section of
``ragloom.yaml``, and the section that chooses a component and carries its options.

A component (built-in or plugin) declares its settings once, beside its code, as the model in its
``Options`` class attribute; the registry finds it (``registry.options_model``). The config never names
a component's options itself: ``ComponentSection`` asks the registry, so a built-in's and a plugin's
options reach the config the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from . import registry
from .errors import ConfigError


class Options(BaseModel):
    """Settings checked when they are made: an unknown key is an error, and so is a value refused,
    also when one is assigned later. A component's ``Options`` may derive from it (or from BaseModel)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Section(Options):
    """A section of ``ragloom.yaml`` (``ingest``, ``search.understand``): the engine's options, not one component's."""


class ComponentSection(Section):
    """A section that chooses a component of a registry role (``store.backend``, ``embedder.provider``).

    Beside its own settings it takes a sub-section named after the chosen component, or after any
    plugin of the role, holding the options that component declares in its ``Options`` model:
    ``store: {backend: mystore, mystore: {url: ...}}``. A plugin's sub-section is checked by its
    model when the component is resolved (``options()``); a built-in's that every config carries
    (``store.chroma``, see ``with_builtin_options``) when the config is read. Any other key is an
    unknown setting, as in every section.
    """

    model_config = ConfigDict(extra="allow", validate_assignment=True)
    #: The section's key in the config, the registry role it chooses from, and the field naming the choice.
    config_key: ClassVar[str]
    component_role: ClassVar[str]
    chooser: ClassVar[str]

    @classmethod
    def chosen(cls, data: Mapping[str, Any]) -> list[str]:
        """The components ``data`` (this section's raw settings) chooses."""
        name = data.get(cls.chooser, cls.model_fields[cls.chooser].default)
        return [name] if isinstance(name, str) else []

    @classmethod
    def option_keys(cls, data: Mapping[str, Any]) -> list[str]:
        """The sub-sections ``data`` may add besides the settings: one for each component it chooses
        (a plugin may be registered after the config is read) and each plugin's, chosen or not (a
        config may keep the options of several backends, as it keeps ``store.chroma`` and ``store.qdrant``)."""
        names = dict.fromkeys([*cls.chosen(data), *registry.plugin_names(cls.component_role)])
        return [name for name in names if name not in cls.model_fields]

    @model_validator(mode="after")
    def _only_component_sections(self) -> ComponentSection:
        if not self.model_extra:
            return self  # most configs: no plugin sections, and no need to list the plugins
        allowed = self.option_keys(vars(self))  # the fields' values (the extras are kept apart)
        for extra in self.model_extra:
            if extra not in allowed:
                valid = ", ".join(sorted([*type(self).model_fields, *allowed]))
                raise ValueError(f"unknown setting {extra!r}; valid keys here are: {valid}")
        return self

    def options(self, name: str | None = None) -> BaseModel | None:
        """The options of the component ``name`` (default: the chosen one), checked by its ``Options``
        model; None when it declares none. A misspelt or invalid option is a ConfigError naming it."""
        name = name or getattr(self, self.chooser)
        typed = getattr(self, name, None) if name in type(self).model_fields else None
        if isinstance(typed, BaseModel):
            return typed  # a built-in's own section, checked when the config was read
        model = registry.options_model(self.component_role, name)
        given = (self.model_extra or {}).get(name)
        where = f"{self.config_key}.{name}"
        if model is None:
            if given:
                raise ConfigError(f"{where}: the {self.component_role} {name!r} takes no options; remove that section")
            return None
        return registry.validate_options(model, given, f"{self.component_role} {name!r} ({where})")


SectionT = TypeVar("SectionT", bound=type[ComponentSection])


def with_builtin_options(section: SectionT) -> SectionT:
    """``section`` with a typed sub-section for each built-in of its role whose options every config
    carries (``registry.section_options``: ``store.chroma``), after its own settings and in the
    registry's order. Each is the component's own ``Options`` model with its defaults, so ``ragloom
    init`` writes it out, the JSON schema holds it, and a typo in it fails when the config is read."""
    models = registry.section_options(section.component_role)
    if not models:
        return section
    fields: dict[str, Any] = {name: (model, Field(default_factory=model)) for name, model in models.items()}
    return cast(SectionT, create_model(
        section.__name__, __base__=section, __module__=section.__module__, __doc__=section.__doc__, **fields))
