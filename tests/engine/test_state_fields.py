"""The engine state is declared once (engine/state.py's ENGINE_STATE, engine/fields.py): the
namedtuple, the allocation, the growth and the Numba struct type all come from that table, and a
field added to a table appears in each of them."""

from __future__ import annotations

import numpy as np
from numba import from_dtype
from numba.core import types

from schedlab.engine import constants as K
from schedlab.engine import generated
from schedlab.engine.fields import (
    DTYPES,
    Field,
    Length,
    allocate,
    container,
    sizes_of,
    struct_fields,
)
from schedlab.engine.state import (
    ENGINE_STATE,
    ENGINE_STATE_TYPE,
    EngineSettings,
    RunWindow,
    State,
    build_state,
    grow,
)

SETTINGS = EngineSettings(
    preempt_mode=K.PREEMPT_RESUME,
    migrate_ok=True,
    loss=False,
    delta=0.0,
    check=True,
    drain=False,
    batches=3,
    timeseries=4,
    slowdown_threshold=10.0,
    reuse_slots=True,
    jobs_chunk=5,
)
SIZES = {"slots": 4, "block": 6, "classes": 2, "servers": 3, "resources": 2}


def small_state() -> State:
    return build_state(
        class_elastic=np.array([0, 1], dtype=np.int8),
        class_max_alloc=np.array([1.0, 2.0]),
        class_reward=np.array([0.5, 1.5]),
        capacity=np.ones((SIZES["servers"], SIZES["resources"])),
        settings=SETTINGS,
        window=RunWindow(n_jobs=100, warm_jobs=10, t_warm=1.0, t_end=9.0),
        slots=SIZES["slots"],
        block=SIZES["block"],
    )


def test_container_struct_and_allocation_follow_the_table():
    names = [f.name for f in ENGINE_STATE]
    assert list(State._fields) == names
    assert [name for name, _ in ENGINE_STATE_TYPE.field_dict.items()] == names
    st = small_state()
    for f in ENGINE_STATE:
        array = getattr(st, f.name)
        typ = ENGINE_STATE_TYPE.field_dict[f.name]
        assert isinstance(typ, types.Array) and typ.layout == "C", f.name
        assert typ.dtype == from_dtype(np.dtype(DTYPES[f.dtype])), f.name
        assert typ.ndim == len(f.dims) == array.ndim, f.name
        assert array.dtype == DTYPES[f.dtype] and array.flags.c_contiguous, f.name
        assert f.doc and f.doc in getattr(State, f.name).__doc__
    # the sizes the arrays were made with, read back from their shapes
    n_res, n_cls = SIZES["resources"], SIZES["classes"]
    assert sizes_of(ENGINE_STATE, st) == {
        "jobs": 4,
        "resources": n_res,
        "classes": n_cls,
        "block": 6,
        "servers": 3,
        "batches": 3,
        "samples": 4,
        "records": SETTINGS.jobs_chunk + 4,
        "log": 0,  # the action log is off
    }
    assert st.acc.shape == (3, K.A_FIRST_RESOURCE + n_res + 2 * n_cls)
    assert st.jacc.shape == (3, K.J_FIRST_CLASS + K.J_PER_CLASS * n_cls)
    assert st.batch_edges.shape == st.job_edges.shape == (4,)


def test_grow_enlarges_every_per_slot_array_keeps_contents_and_frees_new_slots():
    st = small_state()
    st.arrival[:] = [1.0, 2.0, 3.0, 4.0]
    st.demand[1] = [0.5, 0.25]
    st.status[:] = K.WAITING
    st.ctr[K.N_FREE] = 0
    st.out_f[2, 0] = 7.0
    g = grow(st, 8)
    for f in ENGINE_STATE:
        before, after = getattr(st, f.name), getattr(g, f.name)
        if f.per_job:
            assert after.shape == (8, *before.shape[1:]), f.name
            assert np.array_equal(after[4:], np.full_like(after[4:], f.fill), equal_nan=True)
        elif f.name not in ("out_f", "out_i"):
            assert after is before, f.name
    assert g.arrival.tolist() == [1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0]
    assert g.demand[1].tolist() == [0.5, 0.25]
    assert g.ctr[K.N_FREE] == 4 and sorted(g.free[:4]) == [4, 5, 6, 7]
    assert g.out_f.shape[0] == SETTINGS.jobs_chunk + 8 and g.out_f[2, 0] == 7.0


def test_a_field_added_to_a_table_appears_everywhere():
    extra = Field("extra", "i4", ("jobs", Length(1, classes=2)), fill=3, doc="a new field")
    table = (*ENGINE_STATE, extra)
    cls = container("Extended", table, "test")
    sizes = {"jobs": 4, "block": 2, "classes": 2, "servers": 1, "resources": 1}
    sizes.update(batches=1, samples=0, records=0, log=0)
    st = cls(*allocate(table, sizes, {}, "test"))
    assert st.extra.shape == (4, 5) and st.extra.dtype == np.int32 and (st.extra == 3).all()
    assert cls.extra.__doc__ == "i4[jobs, 1 + 2*classes]: a new field"
    assert dict(struct_fields(table))["extra"] == types.int32[:, ::1]
    assert "    s.extra = extra" in generated.source("test", table)
    assert sizes_of(table, st)["jobs"] == 4
    assert extra.grown(st.extra, 6)[4:].tolist() == [[3] * 5] * 2
