"""posenc in a process forked after posenc's threads ran: libgomp's team of
the forking thread is lost in the child, where posenc then runs on one
thread and gives the parent's bits instead of waiting for it forever."""
import multiprocessing
import queue

import numpy as np

import posenc


def _attention():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 4, 97, 32)).astype(np.float32) for _ in range(3))
    return posenc.attention(q, k, v, causal=True, context=posenc.Context(num_threads=2))


def _send_attention(results):
    results.put(_attention())


def test_forked_child_gives_the_parents_result():
    expected = _attention()  # this thread leads posenc's teams of two
    fork = multiprocessing.get_context("fork")
    results = fork.Queue()
    child = fork.Process(target=_send_attention, args=(results,))
    child.start()
    try:
        result = results.get(timeout=120)
    except queue.Empty:
        result = None
    child.join(timeout=10)
    if child.is_alive():
        child.kill()
        child.join()
    assert result is not None, "the forked child did not finish"
    np.testing.assert_array_equal(result, expected)
