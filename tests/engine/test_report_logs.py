"""The error_log.log reader on constructed blocks in the format of each variant the shared logs hold (configs and
figures made up for the test, the wording the reporters print), on malformed blocks, and over the real shared logs
read at run time (every block read, none guessed)."""
import datetime as dt
import math

import pytest

from apitester.reports.report_logs import Kind, LogSource, discover_logs, read_log_lines, read_logs
from apitester.reports import reports_dir

SOURCE = LogSource(path=None, rel="reports/ci_ce_gpu/test_history/20250606/error/error_log.log", device="GPU",
                   date=dt.date(2025, 6, 6), category="accuracy")


def read(text: str):
    return read_log_lines(text.splitlines(keepends=True), SOURCE)


def only(text: str):
    result = read(text)
    assert result.unparseable == [], [str(u) for u in result.unparseable]
    assert len(result.failures) == 1
    return result.failures[0]


# torch.testing's wording, backward
TORCH_BACKWARD = """2025-06-01 10:00:00.000001 GPU 0 1 test begin: paddle.multiply(Tensor([2, 64, 4, 32],"bfloat16"), Tensor([2, 64, 1, 32],"bfloat16"), )
[accuracy error] backward  paddle.multiply(Tensor([2, 64, 4, 32],"bfloat16"), Tensor([2, 64, 1, 32],"bfloat16"), ) 
 Not equal to tolerance rtol=0.01, atol=0.01
Tensor-likes are not close!

Mismatched elements: 7 / 4096 (0.2%)
Greatest absolute difference: 0.03125 at index (1, 3, 0, 5) (up to 0.01 allowed)
Greatest relative difference: 0.25 at index (0, 9, 0, 2) (up to 0.01 allowed)
ACTUAL: (shape=torch.Size([2, 64, 1, 32]), dtype=torch.float32)
DESIRED: (shape=torch.Size([2, 64, 1, 32]), dtype=torch.float32)
"""


def test_torch_testing_backward_block():
    failure = only(TORCH_BACKWARD)
    assert failure.config == 'paddle.multiply(Tensor([2, 64, 4, 32],"bfloat16"), Tensor([2, 64, 1, 32],"bfloat16"), )'
    assert (failure.kind, failure.direction, failure.mismatched, failure.total) == (Kind.VALUES, "backward", 7, 4096)
    assert failure.max_abs == 0.03125 and failure.max_rel == pytest.approx(0.25)
    assert (failure.file, failure.line, failure.date, failure.device) == (SOURCE.rel, 2, dt.date(2025, 6, 6), "GPU")
    assert failure.message == "Mismatched elements: 7 / 4096 (0.2%)"


def test_infinite_difference_is_kept_as_inf():
    failure = only("""2025-06-01 10:00:01.000002 GPU 1 2 test begin: paddle.Tensor.__mul__(Tensor([4, 4],"float16"), 100000.0, )
[accuracy error] paddle.Tensor.__mul__(Tensor([4, 4],"float16"), 100000.0, ) 
 Not equal to tolerance rtol=0.01, atol=0.01
Tensor-likes are not close!

Mismatched elements: 3 / 16 (18.8%)
Greatest absolute difference: inf at index (1, 2) (up to 0.01 allowed)
Greatest relative difference: inf at index (1, 2) (up to 0.01 allowed)
""")
    assert failure.direction == "forward" and (failure.mismatched, failure.total) == (3, 16)
    assert math.isinf(failure.max_abs) and math.isinf(failure.max_rel)


def test_numpy_among_violations_block_with_noise_before_the_result_line():
    # numpy >= 2 wording; a framework warning sits between `test begin` and the result line
    failure = only("""2025-04-01 08:00:00.000003 test begin: paddle.sum(Tensor([2, 5],"float32"), )
UserWarning: a line the framework printed
[accuracy error] paddle.sum(Tensor([2, 5],"float32"), )
Not equal to tolerance rtol=0.01, atol=0.01
Mismatched elements: 1 / 1 (100%)
Max absolute difference among violations: 0.25
Max relative difference among violations: 1.5
ACTUAL: array(-0.1)
DESIRED: array(0.15)
""")
    assert (failure.kind, failure.mismatched, failure.total) == (Kind.VALUES, 1, 1)
    assert (failure.max_abs, failure.max_rel) == (0.25, 1.5)


def test_old_numpy_max_difference_and_shape_mismatch():
    # numpy < 2 wording, and its shape message
    result = read("""2025-03-01 09:00:00.000004 test begin: paddle.any(Tensor([2, 0, 3],"bool"), axis=tuple(), keepdim=True, )

[accuracy error] paddle.any(Tensor([2, 0, 3],"bool"), axis=tuple(), keepdim=True, ) 
 
Arrays are not equal

(shapes (1, 1, 1), (2, 0, 3) mismatch)
 x: array([[[False]]])
 y: array([], shape=(2, 0, 3), dtype=bool)
2025-03-01 09:00:01.000000 test begin: paddle.maximum(Tensor([3, 4],"float32"), Tensor([3, 4],"float32"), )

[accuracy error] backward  paddle.maximum(Tensor([3, 4],"float32"), Tensor([3, 4],"float32"), ) 
 
Not equal to tolerance rtol=0.01, atol=0.01

Mismatched elements: 2 / 12 (16.7%)
Max absolute difference: 2.
Max relative difference: inf
""")
    shape, values = result.failures
    assert (shape.kind, shape.message, shape.max_abs) == (Kind.SHAPE, "(shapes (1, 1, 1), (2, 0, 3) mismatch)", None)
    assert (values.direction, values.mismatched, values.total, values.max_abs) == ("backward", 2, 12, 2.0)
    assert math.isinf(values.max_rel)


def test_worker_format_torch_shape_message():
    # blocks that open with `[Worker N] Processing Task K:`
    result = read("""[Worker 1] Processing Task 7: paddle.any(Tensor([2, 0, 3],"float32"), axis=tuple(), keepdim=True, )
W0601 10:00:02.000000 1234 gpu_resources.cc:1] a line the framework printed
[accuracy error] paddle.any(Tensor([2, 0, 3],"float32"), axis=tuple(), keepdim=True, ) 
 Not equal to tolerance rtol=0.01, atol=0.01
The values for attribute 'shape' do not match: torch.Size([1, 1, 1]) != torch.Size([2, 0, 3]).
ACTUAL: (shape=torch.Size([1, 1, 1]), dtype=torch.bool)
[Worker 1] Completed Task 7

[Worker 1] Processing Task 8: paddle.all(Tensor([5],"int64"), )
[Worker 1] Completed Task 8
""")
    assert [f.kind for f in result.failures] == [Kind.SHAPE] and result.unparseable == []
    assert result.failures[0].message.startswith("The values for attribute 'shape' do not match")
    assert result.begun_without_result == 1


def test_dtype_scalar_special_values_output_structure():
    result = read("""2025-06-01 10:00:03.000000 GPU 1 1 test begin: paddle.linalg.matrix_rank(Tensor([4, 4],"float32"), )
[accuracy error] paddle.linalg.matrix_rank(Tensor([4, 4],"float32"), ) 
 Not equal to tolerance rtol=0.01, atol=0.01
The values for attribute 'dtype' do not match: torch.int64 != torch.int32.
2025-06-01 10:00:04.000000 GPU 2 2 test begin: paddle.broadcast_to(Tensor([],"float16"), list[512,], )
[accuracy error] backward  paddle.broadcast_to(Tensor([],"float16"), list[512,], ) 
 Not equal to tolerance rtol=0.01, atol=0.01
Scalars are not close!

Expected 1.5 but got -2.5.
Absolute difference: 4.0 (up to 0.01 allowed)
Relative difference: 2.6666666666666665 (up to 0.01 allowed)
2025-06-01 10:00:05.000000 GPU 3 3 test begin: paddle.Tensor.logit(x=Tensor([3, 2],"float64"), )
[accuracy error] paddle.Tensor.logit(x=Tensor([3, 2],"float64"), ) 
Not equal to tolerance rtol=0.01, atol=0.01

nan location mismatch:
 ACTUAL: array([[ 0.5, -1.0],
2025-04-01 08:00:06.000000 test begin: paddle.unique(Tensor([30],"int64"), return_index=True, return_inverse=True, return_counts=True, dtype="int32", )
[accuracy error] paddle.unique(Tensor([30],"int64"), return_index=True, return_inverse=True, return_counts=True, dtype="int32", )
[output type diff error2],  4 3
""")
    assert result.unparseable == []
    dtype, scalar, special, outputs = result.failures
    assert dtype.kind == Kind.DTYPE
    assert (scalar.kind, scalar.direction, scalar.mismatched, scalar.total, scalar.max_abs) == (Kind.VALUES, "backward", 1, 1, 4.0)
    assert scalar.max_rel == pytest.approx(2.6666666666666665)
    assert (special.kind, special.message) == (Kind.SPECIAL_VALUES, "nan location mismatch:")
    assert (outputs.kind, outputs.message) == (Kind.OUTPUT_STRUCTURE, "[output type diff error2],  4 3")


def test_paddle_errors_and_not_compared():
    result = read("""2025-06-01 10:00:07.000000 GPU 4 4 test begin: paddle.nn.functional.linear(x=tuple(Tensor([1, 4],"float32"),), weight=Tensor([4, 4],"float16"), bias=None, name=None, )
[paddle error] paddle.nn.functional.linear(x=tuple(Tensor([1, 4],"float32"),), weight=Tensor([4, 4],"float16"), bias=None, name=None, ) 
 (InvalidArgument) linear(): argument 'X' (position 0) must be Tensor, but got tuple (at ../paddle/example.cc:1)
  [operator < linear > error]

2025-06-01 10:00:08.000000 GPU 4 4 test begin: paddle.incubate.nn.functional.fused_layer_norm(Tensor([7, 16],"float16"), Tensor([16],"float32"), Tensor([16],"float32"), 1e-05, begin_norm_axis=1, )
[accuracy error] paddle.incubate.nn.functional.fused_layer_norm(Tensor([7, 16],"float16"), Tensor([16],"float32"), Tensor([16],"float32"), 1e-05, begin_norm_axis=1, ) 
 (PreconditionNotMet) Tensor not initialized yet.
  [Hint: an example hint.] (at ../paddle/example.cc:2)

2025-06-01 10:00:09.000000 GPU 5 5 test begin: paddle.combinations(Tensor([0],"float32"), r=3, )
[not compare]  None tensor([])
""")
    assert result.unparseable == []
    linear, fused, combinations = result.failures
    assert (linear.kind, linear.direction) == (Kind.PADDLE_ERROR, "")
    assert linear.message.startswith("(InvalidArgument) linear(): argument 'X'") and "[operator < linear > error]" in linear.message
    assert (fused.kind, fused.direction) == (Kind.PADDLE_ERROR, "forward")
    assert (combinations.kind, combinations.config) == (Kind.NOT_COMPARED, 'paddle.combinations(Tensor([0],"float32"), r=3, )')


def test_malformed_blocks_are_reported_with_file_and_line_never_guessed():
    result = read('''2025-06-01 11:00:00.000000 GPU 7 1 test begin: paddle.abs(Tensor([2],"float32"), )
[accuracy error] paddle.abs(Tensor([2],"float32"), ) 
 Not equal to tolerance rtol=0.01, atol=0.01
something nobody has seen before
2025-06-01 11:00:00.000000 GPU 7 1 test begin: paddle.abs(Tensor([3],"float32"), )
[accuracy error] paddle.abs(Tensor([4],"float32"), ) 
Mismatched elements: 1 / 3 (33.3%)
[paddle error] 
2025-06-01 11:00:00.000000 GPU 7 1 test begin: paddle.exp(Tensor([3],"float32"), )
[paddle error] paddle.exp(Tensor([3],"float32"), ) 

''')
    assert result.failures == []
    assert [(u.line, u.message) for u in result.unparseable] == [
        (2, "accuracy error without a known difference line (mismatched elements, shapes, dtypes or nan/inf locations)"),
        (6, "result line names another config than its block's `test begin`"),
        (8, "result line without a config"),
        (10, "paddle error without an exception message"),
    ]
    assert str(result.unparseable[0]).startswith(f"{SOURCE.rel}:2: accuracy error without")


def test_every_block_of_the_shared_logs_is_read():
    logs = discover_logs(reports_dir())
    assert len(logs) == 12 and {s.device for s in logs} == {"CPU", "GPU"}
    assert {(s.rel.split("/")[-2], s.date, s.category) for s in logs if s.device == "GPU"} >= {
        ("amp_error", dt.date(2025, 6, 6), "amp"), ("20250319", dt.date(2025, 3, 19), "accuracy")}
    result = read_logs(reports_dir())
    assert result.unparseable == [], [str(u) for u in result.unparseable[:5]]
    assert result.blocks == len(result.failures) > 15000
    gpu = [f for f in result.failures if f.device == "GPU"]
    assert len(gpu) > 3000 and {f.kind for f in result.failures} == set(Kind.ALL)
    assert all(f.mismatched is not None and f.max_abs is not None for f in result.failures if f.kind == Kind.VALUES)
