"""The packaged encoders run single-threaded ONNX sessions side by side (``models.sessions``):
the same vectors and scores bit for bit as one session with every thread, jobs really run at
once, and concurrent callers never run more sessions than the pool holds."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ragloom.config import Config, EmbedderConfig
from ragloom.embed import create_embedder
from ragloom.models.cross_encoder import CrossEncoder, model_folder
from ragloom.models.sessions import SessionPool, session_plan, usable_cores

WORDS = ("robots publish messages on topics while services answer requests and actions report "
         "progress toward long running goals in the ROS 2 graph of nodes").split()


def texts(n: int) -> list[str]:
    """n texts of very different lengths (3 to ~400 words), so batches and padding differ."""
    rng = np.random.default_rng(3)
    return [" ".join(rng.choice(WORDS, size=3 + (i * 37) % 400)) for i in range(n)]


def test_side_by_side_sessions_give_the_vectors_of_one_two_thread_session_bit_for_bit():
    one = create_embedder(EmbedderConfig(threads=2, sessions=1))
    side_by_side = create_embedder(EmbedderConfig(threads=2, sessions=2))
    corpus = texts(40)
    try:
        assert np.array_equal(one.embed_documents(corpus), side_by_side.embed_documents(corpus))
        assert np.array_equal(one.embed_queries(corpus[:5]), side_by_side.embed_queries(corpus[:5]))
        assert side_by_side._pool.sessions_made == 2  # both were used for the documents
    finally:
        one.close()
        side_by_side.close()


def test_one_query_loads_one_session():
    embedder = create_embedder(EmbedderConfig(threads=2, sessions=2))
    try:
        embedder.embed_query("how do nodes communicate?")
        assert embedder._pool.sessions_made == 1
    finally:
        embedder.close()


def test_cross_encoder_scores_do_not_depend_on_the_sessions():
    query = "how do ROS 2 nodes communicate?"
    passages = texts(40)  # three batches of 16
    one = CrossEncoder(threads=2, sessions=1)
    side_by_side = CrossEncoder(threads=2, sessions=2)
    try:
        assert np.array_equal(one.logits(query, passages), side_by_side.logits(query, passages))
        pairs = [(query if i % 2 else "what is a topic?", p) for i, p in enumerate(passages)]
        assert np.array_equal(one.score_pairs(pairs), side_by_side.score_pairs(pairs))
        assert side_by_side._pool.sessions_made == 2
    finally:
        one.close()
        side_by_side.close()


@pytest.fixture
def pool():
    pool = SessionPool(model_folder(None) / "model.onnx", count=2, threads_each=1)
    yield pool
    pool.close()


def test_map_runs_jobs_at_once_in_input_order(pool):
    meet = threading.Barrier(2, timeout=30)  # broken unless two jobs run at the same time

    def job(n: int) -> int:
        if n < 2:
            meet.wait()
        return n * n

    assert list(pool.map(job, range(6))) == [0, 1, 4, 9, 16, 25]


def test_a_failed_job_is_raised_and_the_pool_goes_on(pool):
    def job(n: int) -> int:
        if n == 3:
            raise ValueError("job 3 failed")
        return n

    with pytest.raises(ValueError, match="job 3 failed"):
        list(pool.map(job, range(8)))
    assert list(pool.map(lambda n: n + 1, range(4))) == [1, 2, 3, 4]


def test_a_job_that_maps_again_runs_its_inner_jobs_itself(pool):
    """A worker waiting on jobs queued behind it would deadlock a pool of busy workers."""
    assert list(pool.map(lambda n: sum(pool.map(lambda m: m, range(n))), range(5))) == [0, 0, 1, 3, 6]


def test_concurrent_callers_share_the_sessions_and_never_run_more(pool):
    third_has_one = threading.Event()

    def third() -> None:
        with pool.session():
            third_has_one.set()

    with pool.session() as a, pool.session() as b:
        assert a is not b
        waiting = threading.Thread(target=third)
        waiting.start()
        assert not third_has_one.wait(0.5)  # both sessions are busy: the third caller waits
    waiting.join(timeout=30)
    assert third_has_one.is_set() and pool.sessions_made == 2


def test_session_plan_splits_the_threads():
    assert session_plan(0, 0) == (usable_cores(), 1)
    assert session_plan(1, 0) == (1, 1)
    assert session_plan(2, 1) == (1, 2)
    assert session_plan(4, 2) == (2, 2)
    assert Config.model_validate({"embedder": {"sessions": 3}}).embedder.sessions == 3


def test_a_pairs_score_does_not_depend_on_the_other_pairs():
    """Each pair runs on its own, so what else is scored in the same call changes nothing."""
    query = "how do ROS 2 nodes communicate?"
    passages = texts(20)
    model = CrossEncoder(threads=2)
    try:
        together = model.logits(query, passages)
        alone = np.array([model.logits(query, [p])[0] for p in passages])
        assert np.array_equal(together, alone)
        assert np.array_equal(model.logits(query, passages[5:]), together[5:])
    finally:
        model.close()
