#!/usr/bin/env python3
"""Rewrites a SPIR-V module from SPV_NV_cooperative_matrix to SPV_KHR_cooperative_matrix.

The build's glslang (11.13) compiles GL_NV_cooperative_matrix but neither GL_KHR_cooperative_matrix
nor GL_NV_cooperative_matrix2, whose workgroup-scope matrices and tensor-addressed loads need the
KHR matrix types. So those shaders are written with fcoopmatNV (any scope, any size) plus the
tensor-addressing instructions of tensor_addressing.glsl, and this pass turns the result into
what the driver expects:

  * each OpTypeCooperativeMatrixNV becomes OpTypeCooperativeMatrixKHR, with the matrix use (A, B
    or accumulator) read off the multiply-adds that consume it;
  * NV loads, stores, multiply-adds and lengths become their KHR twins (the column-major flag
    becomes a layout constant);
  * the literal parameters GL_EXT_spirv_intrinsics gave OpTypeTensorLayoutNV and
    OpTypeTensorViewNV become the constant ids SPIR-V requires;
  * the capability and extension follow.

Usage: coopmat_khr_rewrite.py IN.spv OUT.spv
"""
import struct
import sys

OP_EXTENSION, OP_CAPABILITY, OP_TYPE_BOOL, OP_TYPE_INT = 10, 17, 20, 21
OP_CONSTANT_TRUE, OP_CONSTANT_FALSE, OP_CONSTANT = 41, 42, 43
OP_SPEC_CONSTANT_TRUE, OP_SPEC_CONSTANT_FALSE = 48, 49
NV_TYPE, NV_LOAD, NV_STORE, NV_MULADD, NV_LENGTH = 5358, 5359, 5360, 5361, 5362
KHR_TYPE, KHR_LOAD, KHR_STORE, KHR_MULADD, KHR_LENGTH = 4456, 4457, 4458, 4459, 4460
CAPABILITY_NV, CAPABILITY_KHR = 5357, 6022
TENSOR_LAYOUT_TYPE, TENSOR_VIEW_TYPE, LOAD_TENSOR = 5370, 5371, 5367
USE_A, USE_B, USE_ACCUMULATOR = 0, 1, 2
ROW_MAJOR, COLUMN_MAJOR = 0, 1
# Instructions whose words 1 and 2 are a result type and a result id: the ones that can produce a
# matrix a multiply-add consumes (loads, copies, conversions, phis, constructions, arithmetic).
VALUE_OPS = {1, 44, 50, 61, 80, 83, 115, 116, 117, 127, 129, 131, 133, 136, 245, NV_LOAD,
             NV_MULADD, LOAD_TENSOR}


def words_of_string(s):
    data = s.encode() + b"\0"
    data += b"\0" * (-len(data) % 4)
    return list(struct.unpack("<%dI" % (len(data) // 4), data))


def string_of_words(words):
    return struct.pack("<%dI" % len(words), *words).split(b"\0")[0].decode()


def parse(data):
    if len(data) % 4 or len(data) < 20:
        raise ValueError("not a SPIR-V module")
    words = list(struct.unpack("<%dI" % (len(data) // 4), data))
    if words[0] != 0x07230203:
        raise ValueError("not a little-endian SPIR-V module")
    insts, i = [], 5
    while i < len(words):
        count = words[i] >> 16
        if count == 0 or i + count > len(words):
            raise ValueError("truncated instruction at word %d" % i)
        insts.append([words[i] & 0xFFFF] + words[i + 1:i + count])
        i += count
    return words[:5], insts


def matrix_uses(insts):
    value_type = {ins[2]: ins[1] for ins in insts if ins[0] in VALUE_OPS}
    uses = {}

    def set_use(type_id, use):
        if uses.setdefault(type_id, use) != use:
            raise ValueError("matrix type %%%d is used as two different operands; give the "
                             "matrices different shapes or size constants" % type_id)

    for ins in insts:
        if ins[0] == NV_MULADD:
            set_use(value_type[ins[3]], USE_A)
            set_use(value_type[ins[4]], USE_B)
            set_use(value_type[ins[5]], USE_ACCUMULATOR)
            set_use(ins[1], USE_ACCUMULATOR)
    return uses


def rewrite(data):
    header, insts = parse(data)
    bound = header[3]

    def new_id():
        nonlocal bound
        bound += 1
        return bound - 1

    bools = {}
    for ins in insts:
        if ins[0] in (OP_CONSTANT_TRUE, OP_SPEC_CONSTANT_TRUE):
            bools[ins[2]] = True
        elif ins[0] in (OP_CONSTANT_FALSE, OP_SPEC_CONSTANT_FALSE):
            bools[ins[2]] = False
    uses = matrix_uses(insts)
    uint_type = next((ins for ins in insts if ins[0] == OP_TYPE_INT and ins[2:] == [32, 0]), None)
    bool_type = next((ins for ins in insts if ins[0] == OP_TYPE_BOOL), None)
    literals = {USE_A, USE_B, USE_ACCUMULATOR}
    for ins in insts:
        if ins[0] in (TENSOR_LAYOUT_TYPE, TENSOR_VIEW_TYPE):
            literals.update(ins[2:])
    const = {}
    out = []
    for ins in insts:
        op = ins[0]
        if op in (NV_TYPE, TENSOR_LAYOUT_TYPE, TENSOR_VIEW_TYPE) and not const:
            # The constants the rewritten types name, declared (with their types, moved up if
            # they came later) just before the first of those types.
            if uint_type is None:
                uint_type = [OP_TYPE_INT, new_id(), 32, 0]
            if bool_type is None:
                bool_type = [OP_TYPE_BOOL, new_id()]
            for t in (uint_type, bool_type):
                if not any(t is o for o in out):
                    out.append(t)
            for value in sorted(literals):
                const[value] = new_id()
                out.append([OP_CONSTANT, uint_type[1], const[value], value])
            const["false"], const["true"] = new_id(), new_id()
            out.append([OP_CONSTANT_FALSE, bool_type[1], const["false"]])
            out.append([OP_CONSTANT_TRUE, bool_type[1], const["true"]])
        if any(ins is o for o in out):
            continue  # a type moved up above
        if op == OP_CAPABILITY and ins[1] == CAPABILITY_NV:
            ins = [OP_CAPABILITY, CAPABILITY_KHR]
        elif op == OP_EXTENSION and string_of_words(ins[1:]) == "SPV_NV_cooperative_matrix":
            ins = [OP_EXTENSION] + words_of_string("SPV_KHR_cooperative_matrix")
        elif op == NV_TYPE:
            ins = [KHR_TYPE] + ins[1:6] + [const[uses.get(ins[1], USE_ACCUMULATOR)]]
        elif op == NV_LOAD:
            result_type, result, pointer, stride, column_major = ins[1:6]
            layout = COLUMN_MAJOR if bools[column_major] else ROW_MAJOR
            ins = [KHR_LOAD, result_type, result, pointer, const[layout], stride] + ins[6:]
        elif op == NV_STORE:
            pointer, value, stride, column_major = ins[1:5]
            layout = COLUMN_MAJOR if bools[column_major] else ROW_MAJOR
            ins = [KHR_STORE, pointer, value, const[layout], stride] + ins[5:]
        elif op == NV_MULADD:
            ins = [KHR_MULADD] + ins[1:]
        elif op == NV_LENGTH:
            ins = [KHR_LENGTH] + ins[1:]
        elif op == TENSOR_LAYOUT_TYPE:
            ins = [op, ins[1], const[ins[2]], const[ins[3]]]
        elif op == TENSOR_VIEW_TYPE:
            ins = [op, ins[1], const[ins[2]], const["true" if ins[3] else "false"]] + [const[v] for v in ins[4:]]
        out.append(ins)
    header[3] = bound
    words = header[:]
    for ins in out:
        words.append((len(ins) << 16) | ins[0])
        words += ins[1:]
    return struct.pack("<%dI" % len(words), *words)


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    with open(argv[1], "rb") as f:
        data = f.read()
    try:
        result = rewrite(data)
    except (ValueError, KeyError) as e:
        sys.exit("%s: %s" % (argv[1], e))
    with open(argv[2], "wb") as f:
        f.write(result)


if __name__ == "__main__":
    main(sys.argv)
