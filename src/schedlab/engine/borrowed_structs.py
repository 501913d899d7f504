"""Structs of arrays for compiled code, read without reference counting (decision 0004).

The engine state and every policy state are Numba structrefs whose fields are arrays (and a few
scalars). Numba's own structref counts references on every use: reading ``st.x`` increments the
array's count and decrements it when the value dies, and every call that passes ``st`` on
increments and decrements the struct's count. Each is an atomic operation behind a call; together
they took a fifth of the event loop's time (17-21% of its perf samples). Here:

* :func:`register_array_struct` registers a struct type whose field reads return a view with no
  owner (meminfo NULL), valid while the struct lives; Numba's reference-count pruning pass then
  deletes the operations on it. Only the constructors (called from Python, with arrays Python
  made) set array fields; the event loop cannot replace one (only scalar fields may be assigned
  through a borrowed pointer), so no view outlives its array. A view returned to Python is its
  array itself (Numba boxes an array by returning its parent NumPy object).
* :func:`borrow` turns a struct into a :class:`BorrowedStruct`: a plain pointer to the struct's
  fields, passed from function to function with no reference counting. The event loop borrows the
  engine and policy states once per call from Python, which holds both for the whole call.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import (
    infer_getattr,
    intrinsic,
    lower_getattr_generic,
    lower_setattr_generic,
    models,
    overload,
    register_model,
)

from schedlab._jit import (
    AttributeTemplate,
    cgutils,
    imputils,
    member_pointer,
    member_value,
    struct_data,
    struct_data_pointer,
)


class BorrowedStruct(types.Type):
    """A pointer to the fields of a struct of ``struct_type`` owned by someone else."""

    def __init__(self, struct_type: types.StructRef) -> None:
        self.struct_type = struct_type
        super().__init__(name=f"Borrowed[{struct_type.name}]")

    @property
    def key(self):
        return self.struct_type


register_model(BorrowedStruct)(models.OpaqueModel)  # an untyped pointer to the fields


_REGISTERED: set[type] = set()


def _is_registered(struct_type) -> bool:
    return type(struct_type) in _REGISTERED


def _fields(context, builder, struct_type, pointer):
    """Getter/setter proxy on the fields behind ``pointer``."""
    data_type = struct_type.get_data_type()
    typed = builder.bitcast(pointer, context.get_value_type(data_type).as_pointer())
    return cgutils.create_struct_proxy(data_type)(context, builder, ref=typed)


def _pointer(context, builder, struct_type, value):
    """The untyped pointer to the fields of the struct ``value``."""
    typed = struct_data_pointer(context, builder, struct_type, value)
    return builder.bitcast(typed, cgutils.voidptr_t)


def _load_invariant(builder, pointer):
    """Load the value at ``pointer`` member by member, each load marked ``!invariant.load``: the
    optimizer may then reuse or hoist it across stores to arrays (an array field of a borrowed
    struct never changes while compiled code runs, see _check_assignable)."""
    value_type = pointer.type.pointee
    if isinstance(value_type, ir.BaseStructType | ir.ArrayType):
        elements = value_type.elements if isinstance(value_type, ir.BaseStructType) else None
        count = value_type.count if elements is None else len(elements)
        value = ir.Constant(value_type, ir.Undefined)
        for i in range(count):
            member = builder.gep(pointer, [cgutils.int32_t(0), cgutils.int32_t(i)], inbounds=True)
            value = builder.insert_value(value, _load_invariant(builder, member), i)
        return value
    load = builder.load(pointer)
    load.set_metadata("invariant.load", builder.module.add_metadata([]))
    return load


def _read(context, builder, struct_type, fields, attr, invariant=False):
    """Read field ``attr``: arrays as views with no owner (``invariant``: through a borrowed
    pointer, loaded with _load_invariant); scalars and nested structs (counted references) as
    Numba's structref does."""
    field_type = struct_type.field_dict[attr]
    if invariant and isinstance(field_type, types.Array):
        raw = _load_invariant(builder, member_pointer(fields, attr))
        value = member_value(fields, attr, raw)
    else:
        value = getattr(fields, attr)
    if isinstance(field_type, types.Array):
        view = context.make_array(field_type)(context, builder, value=value)
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        return imputils.impl_ret_untracked(context, builder, field_type, view._getvalue())
    return imputils.impl_ret_borrowed(context, builder, field_type, value)


def _write(context, builder, struct_type, fields, attr, value, value_type):
    field_type = struct_type.field_dict[attr]
    cast = context.cast(builder, value, value_type, field_type)
    old = getattr(fields, attr)
    context.nrt.incref(builder, field_type, cast)
    context.nrt.decref(builder, field_type, old)  # last: the new value may be the old one
    setattr(fields, attr, cast)


def _resolve_field(struct_type, attr):
    return struct_type.field_dict.get(attr)


def _check_assignable(struct_type, attr):
    """Through a borrowed pointer only scalar fields may be assigned."""
    if attr in struct_type.field_dict and not isinstance(
        struct_type.field_dict[attr], types.Number | types.Boolean
    ):
        raise TypingError(
            f"field {attr!r} is an array or a struct: the event loop may change its contents, "
            "not replace it (views read from it would dangle)"
        )


def register_array_struct(struct_typeclass):
    """``structref.register`` for a struct type whose array fields are read without reference
    counting (set them only in a constructor called from Python)."""
    register_model(struct_typeclass)(models.StructRefModel)
    _REGISTERED.add(struct_typeclass)

    @infer_getattr
    class _OwnedField(AttributeTemplate):
        key = struct_typeclass

        def generic_resolve(self, typ, attr):
            return _resolve_field(typ, attr)

    @lower_getattr_generic(struct_typeclass)
    def _get_owned(context, builder, typ, val, attr):
        fields = struct_data(context, builder, typ, val)
        return _read(context, builder, typ, fields, attr)

    @lower_setattr_generic(struct_typeclass)
    def _set_owned(context, builder, sig, args, attr):
        inst_type, val_type = sig.args
        fields = struct_data(context, builder, inst_type, args[0])
        _write(context, builder, inst_type, fields, attr, args[1], val_type)

    return struct_typeclass


@infer_getattr
class _BorrowedField(AttributeTemplate):
    key = BorrowedStruct

    def generic_resolve(self, typ, attr):
        return _resolve_field(typ.struct_type, attr)


@lower_getattr_generic(BorrowedStruct)
def _get_borrowed(context, builder, typ, val, attr):
    fields = _fields(context, builder, typ.struct_type, val)
    return _read(context, builder, typ.struct_type, fields, attr, invariant=True)


@lower_setattr_generic(BorrowedStruct)
def _set_borrowed(context, builder, sig, args, attr):
    inst_type, val_type = sig.args
    _check_assignable(inst_type.struct_type, attr)
    fields = _fields(context, builder, inst_type.struct_type, args[0])
    _write(context, builder, inst_type.struct_type, fields, attr, args[1], val_type)


def borrow(state):
    """The state as compiled code passes it on without reference counting (itself in Python);
    the caller keeps ``state`` alive while the borrowed pointer is used."""
    return state


@intrinsic
def _borrow_pointer(typingctx, state):
    if not (isinstance(state, types.StructRef) and _is_registered(state)):
        return None

    def codegen(context, builder, signature, args):
        return _pointer(context, builder, state, args[0])

    return BorrowedStruct(state)(state), codegen


@overload(borrow)
def _borrow_overload(state):
    if isinstance(state, types.StructRef) and _is_registered(state):
        return lambda state: _borrow_pointer(state)
    return lambda state: state
