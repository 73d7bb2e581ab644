"""Every component declares its ``Options`` once; a plugin's config section is checked by that model
when the component is resolved, and the plugin reads the checked options (``section.options()``)."""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragloom import Config, Index, registry
from ragloom.config import ChunkingConfig, EmbedderConfig, LLMConfig, StoreConfig, annotated_yaml
from ragloom.embed.base import Embedder, Kind
from ragloom.errors import ConfigError, UnknownConfigKeyError
from ragloom.stores.chroma_options import ChromaStoreConfig
from ragloom.stores.embedded.store import EmbeddedStore
from ragloom.stores.postgres.options import PostgresStoreConfig


class LabelledStore(EmbeddedStore):
    """A plugin store: the embedded store, opened with a label it keeps."""

    name = "labelled-test"

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        label: str = Field(description="what the store calls its index")
        shards: int = Field(1, ge=1, description="shards the plugin would spread chunks over")

    @classmethod
    def open(cls, path: Path, config: Config, read_only: bool = False) -> LabelledStore:
        store = cls(path, config, read_only=read_only)
        store.options = config.store.options()
        return store


class HashingEmbedder(Embedder):
    """A plugin embedder: words hashed into a vector whose length its options choose."""

    class Options(BaseModel):
        dimension: int = Field(64, ge=2)
        salt: str = ""

    def __init__(self, options: HashingEmbedder.Options) -> None:
        self.options = options
        self.dimension = options.dimension
        self.model_id = f"hashing-test:{options.dimension}:{options.salt}"

    @classmethod
    def from_config(cls, config: EmbedderConfig) -> HashingEmbedder:
        return cls(config.options())

    def _embed_batch(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                digest = hashlib.sha256((self.options.salt + word).encode()).digest()
                vectors[row, int.from_bytes(digest[:4], "little") % self.dimension] += 1.0
        return vectors


class PlainEmbedder(HashingEmbedder):
    """A plugin that declares no options."""

    Options = None  # type: ignore[assignment]

    @classmethod
    def from_config(cls, config: EmbedderConfig) -> HashingEmbedder:
        return cls(HashingEmbedder.Options())


@pytest.fixture(autouse=True)
def plugins() -> Iterator[None]:
    registry.register("store", "labelled", LabelledStore)
    registry.register("embedder", "hashing", HashingEmbedder)
    registry.register("embedder", "plain", PlainEmbedder)
    yield
    registry._registered["store"].pop("labelled")
    registry._registered["embedder"].pop("hashing")
    registry._registered["embedder"].pop("plain")


def plugin_config(store: dict | None = None, embedder: dict | None = None) -> Config:
    return Config.from_dict({
        "store": {"backend": "labelled", "labelled": {"label": "docs", "shards": 2}, **(store or {})},
        "embedder": {"provider": "hashing", "hashing": {"dimension": 32, "salt": "s"}, **(embedder or {})},
    })


def test_plugins_registered_at_run_time_receive_their_typed_options(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "kalman.txt").write_text("The Kalman filter updates its covariance with each measurement.")
    with Index.open(tmp_path / "index", plugin_config()) as index:
        assert isinstance(index.store, LabelledStore)
        assert index.store.options == LabelledStore.Options(label="docs", shards=2)
        assert isinstance(index.embedder, HashingEmbedder)
        assert index.embedder.options == HashingEmbedder.Options(dimension=32, salt="s")
        index.ingest([tmp_path / "docs"])
        assert index.stats().dimension == 32
        assert index.search("Kalman covariance", k=1, mode="dense")[0].source.endswith("kalman.txt")
    assert registry.options_model("store", "labelled") is LabelledStore.Options


def test_a_misspelt_plugin_option_names_the_key_and_the_valid_ones(tmp_path: Path) -> None:
    config = plugin_config(store={"labelled": {"lable": "docs"}})  # read without complaint: not resolved yet
    with pytest.raises(ConfigError) as caught:
        Index.open(tmp_path / "index", config)
    message = str(caught.value)
    assert message == ("options of the store 'labelled' (store.labelled): lable: not an option "
                       "(valid options: label, shards)")
    assert not (tmp_path / "index").exists()  # refused before the store was opened

    with Index.open(tmp_path / "index", plugin_config(embedder={"hashing": {"dimensoin": 8}})) as index, \
            pytest.raises(ConfigError, match=r"embedder\.hashing\): dimensoin: not an option \(valid options: "
                                             r"dimension, salt\)"):
        index.embedder  # noqa: B018 - the embedder is built when first asked for


def test_a_plugin_option_of_the_wrong_kind_or_missing_is_refused_with_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"shards: Input should be greater than or equal to 1 .*valid options: "
                                          r"label, shards"):
        Index.open(tmp_path / "index", plugin_config(store={"labelled": {"label": "docs", "shards": 0}}))
    with pytest.raises(ConfigError, match=r"label: Field required"):
        Index.open(tmp_path / "index", Config.from_dict({"store": "labelled"}))


def test_a_plugin_without_options_refuses_a_section() -> None:
    config = Config.from_dict({"embedder": {"provider": "plain", "plain": {"dimension": 8}}})
    with pytest.raises(ConfigError, match=r"embedder\.plain: the embedder 'plain' takes no options"):
        config.embedder.options()
    assert Config.from_dict({"embedder": {"provider": "plain"}}).embedder.options() is None


def test_only_a_chosen_or_registered_components_section_may_be_added(tmp_path: Path) -> None:
    file = tmp_path / "ragloom.yaml"
    file.write_text("store:\n  backend: labelled\n  labeled:\n    label: docs\n")
    with pytest.raises(UnknownConfigKeyError) as caught:
        Config.load(file, env={})
    assert caught.value.key == "store.labeled"
    assert "labelled" in caught.value.valid and "chroma" in caught.value.valid
    with pytest.raises(ValidationError, match="unknown setting 'labeled'"):  # as any bad value of Config(...)
        Config(store={"backend": "labelled", "labeled": {"label": "docs"}})
    # A registered plugin's section may stay while another backend is chosen, as store.qdrant may.
    kept = Config.from_dict({"store": {"backend": "embedded", "labelled": {"label": "docs"}}})
    assert kept.store.options() is kept.store.embedded
    # A plugin chunker named by chunking.by_extension may have its section too.
    chunking = Config.from_dict({"chunking": {"by_extension": {".log": "lines"}, "lines": {}}}).chunking
    assert chunking.model_extra == {"lines": {}}


def test_plugin_options_come_from_the_environment_too(chdir_tmp: Path) -> None:
    (chdir_tmp / "ragloom.yaml").write_text("store: labelled\n")  # the file chooses, RAGLOOM_* configures
    config = Config.load(env={"RAGLOOM_STORE__LABELLED__LABEL": "from-env", "RAGLOOM_STORE__LABELLED__SHARDS": "3"})
    assert config.store.options() == LabelledStore.Options(label="from-env", shards=3)
    with pytest.raises(UnknownConfigKeyError, match=r"'store.labeled' in the environment"):
        Config.load(env={"RAGLOOM_STORE__LABELED__LABEL": "from-env"})


def test_built_in_sections_are_unchanged() -> None:
    assert registry.options_model("store", "chroma") is ChromaStoreConfig
    assert registry.options_model("store", "postgres") is PostgresStoreConfig
    config = Config.from_dict({"store": {"backend": "chroma", "chroma": {"collection": "notes"}}})
    assert config.store.options() is config.store.chroma
    assert config.store.options().collection == "notes"
    # A typo in a built-in's section is still refused when the config is read.
    with pytest.raises(UnknownConfigKeyError, match="store.chroma.colection"):
        Config.from_dict({"store": {"backend": "chroma", "chroma": {"colection": "notes"}}})
    with pytest.raises(UnknownConfigKeyError, match="store.qdrnt"):
        Config.from_dict({"store": {"backend": "qdrant", "qdrnt": {}}})
    assert Config().embedder.options() is None  # the packaged embedder declares no options
    assert "labelled" not in Config().model_dump()["store"]


def test_built_in_options_are_the_components_own_and_reach_the_config_through_the_registry() -> None:
    """A built-in's options are declared once, beside it, as its ``Options``; the section that chooses it
    carries them because the registry names them, and so do ``ragloom init`` and the JSON schema."""
    schema = Config.model_json_schema()
    yaml_text = annotated_yaml()
    for section in (EmbedderConfig, LLMConfig, ChunkingConfig, StoreConfig):
        role = section.component_role
        carried = registry.section_options(role)
        for name, model in carried.items():
            assert registry.options_model(role, name) is model  # the component class's Options
            assert section.model_fields[name].annotation is model
            assert schema["$defs"][section.__name__]["properties"][name] == {"$ref": f"#/$defs/{model.__name__}"}
            assert set(schema["$defs"][model.__name__]["properties"]) == set(model.model_fields)
            assert f"\n  {name}:\n" in yaml_text
    # After the section's own settings, in the registry's order (as ragloom init has always written them).
    assert list(StoreConfig.model_fields) == ["backend", "embedded", "chroma", "qdrant", "postgres"]


def test_the_options_the_config_carries_import_neither_the_config_nor_a_backend() -> None:
    """Reading the config imports these modules, so they hold only the model: a store's options load
    without chromadb, qdrant-client or psycopg, and without the config they are part of."""
    allowed = {"__future__", "typing", "pydantic", "ragloom.options"}
    for role in registry.ROLES:
        for path in registry._SECTIONS.get(role, {}).values():
            module = importlib.import_module(path.partition(":")[0])
            imported = set()
            for node in ast.walk(ast.parse(Path(module.__file__).read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    imported |= {alias.name for alias in node.names}
                elif isinstance(node, ast.ImportFrom):
                    imported.add(importlib.util.resolve_name("." * node.level + (node.module or ""), module.__package__))
            assert imported <= allowed, (path, imported - allowed)
