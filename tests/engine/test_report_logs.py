"""The error_log.log reader on real excerpts of each variant the shared logs hold (lines quoted from
reports/ci_ce_*/…/error_log.log, trimmed of their tensor dumps), on malformed blocks, and over the
real shared logs (every block read, none guessed)."""
import datetime as dt
import math

import pytest

from apitester.report_logs import Kind, LogSource, discover_logs, read_log_lines, read_logs
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


# ci_ce_cpu/error_log.log (torch.testing, backward)
TORCH_BACKWARD = '''2025-06-09 23:16:05.160023 GPU 7 128187 test begin: paddle.Tensor.__mul__(Tensor([1, 1024, 32, 128],"bfloat16"), Tensor([1, 1024, 1, 128],"bfloat16"), )
[accuracy error] backward  paddle.Tensor.__mul__(Tensor([1, 1024, 32, 128],"bfloat16"), Tensor([1, 1024, 1, 128],"bfloat16"), ) 
 Not equal to tolerance rtol=0.01, atol=0.01
Tensor-likes are not close!

Mismatched elements: 118 / 131072 (0.1%)
Greatest absolute difference: 0.0390625 at index (0, 471, 0, 46) (up to 0.01 allowed)
Greatest relative difference: 0.4482758641242981 at index (0, 17, 0, 72) (up to 0.01 allowed)
ACTUAL: (shape=torch.Size([1, 1024, 1, 128]), dtype=torch.float32)
tensor([[[[-0.3086, -0.6797, -0.1216,  ..., -0.3398, -0.3066,  0.3457]],
DESIRED: (shape=torch.Size([1, 1024, 1, 128]), dtype=torch.float32)
tensor([[[[-0.3066, -0.6836, -0.1230,  ..., -0.3398, -0.3086,  0.3477]],
'''


def test_torch_testing_backward_block():
    failure = only(TORCH_BACKWARD)
    assert failure.config == 'paddle.Tensor.__mul__(Tensor([1, 1024, 32, 128],"bfloat16"), Tensor([1, 1024, 1, 128],"bfloat16"), )'
    assert (failure.kind, failure.direction, failure.mismatched, failure.total) == (Kind.VALUES, "backward", 118, 131072)
    assert failure.max_abs == 0.0390625 and failure.max_rel == pytest.approx(0.4482758641242981)
    assert (failure.file, failure.line, failure.date, failure.device) == (SOURCE.rel, 2, dt.date(2025, 6, 6), "GPU")
    assert failure.message == "Mismatched elements: 118 / 131072 (0.1%)"


def test_infinite_difference_is_kept_as_inf():
    failure = only('''2025-06-09 23:16:05.221544 GPU 4 128181 test begin: paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )
[accuracy error] paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, ) 
 Not equal to tolerance rtol=0.01, atol=0.01
Tensor-likes are not close!

Mismatched elements: 10 / 64 (15.6%)
Greatest absolute difference: inf at index (2, 1) (up to 0.01 allowed)
Greatest relative difference: inf at index (2, 1) (up to 0.01 allowed)
''')
    assert failure.direction == "forward" and (failure.mismatched, failure.total) == (10, 64)
    assert math.isinf(failure.max_abs) and math.isinf(failure.max_rel)


def test_numpy_among_violations_block_with_noise_before_the_result_line():
    # ci_ce_cpu/20250427/error_log.log: a torch warning sits between `test begin` and the result line
    failure = only('''2025-04-27 07:06:33.955801 test begin: paddle.sum(Tensor([3, 3],"float32"), )
element 0 of tensors does not require grad and does not have a grad_fn
[accuracy error] paddle.sum(Tensor([3, 3],"float32"), )
Not equal to tolerance rtol=0.01, atol=0.01
Mismatched elements: 1 / 1 (100%)
Max absolute difference among violations: 0.39107639
Max relative difference among violations: 1.72259414
ACTUAL: array(-0.164049)
DESIRED: array(0.227028)
''')
    assert (failure.kind, failure.mismatched, failure.total) == (Kind.VALUES, 1, 1)
    assert (failure.max_abs, failure.max_rel) == (0.39107639, 1.72259414)


def test_old_numpy_max_difference_and_shape_mismatch():
    # ci_ce_gpu/test_history/20250319/error_log.log: numpy < 2 wording, and its shape message
    result = read('''2025-02-25 19:01:13.801288 test begin: paddle.all(Tensor([1, 0, 2],"bool"), axis=tuple(), keepdim=True, )

[accuracy error] paddle.all(Tensor([1, 0, 2],"bool"), axis=tuple(), keepdim=True, ) 
 
Arrays are not equal

(shapes (1, 1, 1), (1, 0, 2) mismatch)
 x: array([[[ True]]])
 y: array([], shape=(1, 0, 2), dtype=bool)
2025-02-25 19:02:00.000000 test begin: paddle.minimum(Tensor([2, 3, 4],"float32"), Tensor([2, 3, 4],"float32"), )

[accuracy error] backward  paddle.minimum(Tensor([2, 3, 4],"float32"), Tensor([2, 3, 4],"float32"), ) 
 
Not equal to tolerance rtol=0.01, atol=0.01

Mismatched elements: 3 / 24 (12.5%)
Max absolute difference: 1.
Max relative difference: inf
''')
    shape, values = result.failures
    assert (shape.kind, shape.message, shape.max_abs) == (Kind.SHAPE, "(shapes (1, 1, 1), (1, 0, 2) mismatch)", None)
    assert (values.direction, values.mismatched, values.total, values.max_abs) == ("backward", 3, 24, 1.0)
    assert math.isinf(values.max_rel)


def test_worker_format_torch_shape_message():
    # ci_ce_gpu/test_history/20250526_2/error_log.log: blocks open with `[Worker N] Processing Task K:`
    result = read('''[Worker 3] Processing Task 3: paddle.all(Tensor([1, 0, 2],"float32"), axis=tuple(), keepdim=True, )
W0526 16:09:12.507861 84552 gpu_resources.cc:114] Please NOTE: device: 0, GPU Compute Capability: 8.0
[accuracy error] paddle.all(Tensor([1, 0, 2],"float32"), axis=tuple(), keepdim=True, ) 
 Not equal to tolerance rtol=0.01, atol=0.01
The values for attribute 'shape' do not match: torch.Size([1, 1, 1]) != torch.Size([1, 0, 2]).
ACTUAL: (shape=torch.Size([1, 1, 1]), dtype=torch.bool)
[Worker 3] Completed Task 3

[Worker 3] Processing Task 4: paddle.any(Tensor([2],"int32"), )
[Worker 3] Completed Task 4
''')
    assert [f.kind for f in result.failures] == [Kind.SHAPE] and result.unparseable == []
    assert result.failures[0].message.startswith("The values for attribute 'shape' do not match")
    assert result.begun_without_result == 1


def test_dtype_scalar_special_values_output_structure():
    result = read('''2025-06-09 23:00:00.000000 GPU 1 1 test begin: paddle.linalg.matrix_rank(Tensor([3, 3],"float32"), )
[accuracy error] paddle.linalg.matrix_rank(Tensor([3, 3],"float32"), ) 
 Not equal to tolerance rtol=0.01, atol=0.01
The values for attribute 'dtype' do not match: torch.int64 != torch.int32.
2025-06-09 23:16:41.901440 GPU 6 128199 test begin: paddle.broadcast_to(Tensor([],"float16"), list[11008,], )
[accuracy error] backward  paddle.broadcast_to(Tensor([],"float16"), list[11008,], ) 
 Not equal to tolerance rtol=0.01, atol=0.01
Scalars are not close!

Expected 4.8671875 but got -10.3828125.
Absolute difference: 15.25 (up to 0.01 allowed)
Relative difference: 3.13322632423756 (up to 0.01 allowed)
2025-05-22 14:29:37.546327 GPU 1 70029 test begin: paddle.Tensor.logit(x=Tensor([4, 2],"float64"), )
[accuracy error] paddle.Tensor.logit(x=Tensor([4, 2],"float64"), ) 
Not equal to tolerance rtol=0.01, atol=0.01

nan location mismatch:
 ACTUAL: array([[ 0.      , -1.659597],
2025-04-27 07:06:33.955801 test begin: paddle.unique(Tensor([120],"int64"), return_index=True, return_inverse=True, return_counts=True, dtype="int32", )
[accuracy error] paddle.unique(Tensor([120],"int64"), return_index=True, return_inverse=True, return_counts=True, dtype="int32", )
[output type diff error2],  4 3
''')
    assert result.unparseable == []
    dtype, scalar, special, outputs = result.failures
    assert dtype.kind == Kind.DTYPE
    assert (scalar.kind, scalar.direction, scalar.mismatched, scalar.total, scalar.max_abs) == (Kind.VALUES, "backward", 1, 1, 15.25)
    assert scalar.max_rel == pytest.approx(3.13322632423756)
    assert (special.kind, special.message) == (Kind.SPECIAL_VALUES, "nan location mismatch:")
    assert (outputs.kind, outputs.message) == (Kind.OUTPUT_STRUCTURE, "[output type diff error2],  4 3")


def test_paddle_errors_and_not_compared():
    result = read('''2025-06-08 11:44:37.720343 GPU 6 65635 test begin: paddle.nn.functional.linear(x=tuple(Tensor([1, 10],"float32"),), weight=Tensor([10, 10],"float16"), bias=None, name=None, )
[paddle error] paddle.nn.functional.linear(x=tuple(Tensor([1, 10],"float32"),), weight=Tensor([10, 10],"float16"), bias=None, name=None, ) 
 (InvalidArgument) linear(): argument 'X' (position 0) must be Tensor, but got tuple (at ../paddle/fluid/pybind/eager_utils.cc:1337)
  [operator < linear > error]

2025-06-08 11:44:37.720343 GPU 6 65635 test begin: paddle.incubate.nn.functional.fused_layer_norm(Tensor([101, 64],"float16"), Tensor([64],"float32"), Tensor([64],"float32"), 1e-05, begin_norm_axis=1, )
[accuracy error] paddle.incubate.nn.functional.fused_layer_norm(Tensor([101, 64],"float16"), Tensor([64],"float32"), Tensor([64],"float32"), 1e-05, begin_norm_axis=1, ) 
 (PreconditionNotMet) Tensor not initialized yet when DenseTensor::place() is called.
  [Hint: holder_ should not be null.] (at ../paddle/phi/core/dense_tensor_impl.cc:62)

2025-06-08 11:41:39.073803 GPU 3 62856 test begin: paddle.combinations(Tensor([0],"float32"), r=2, )
[not compare]  None tensor([])
''')
    assert result.unparseable == []
    linear, fused, combinations = result.failures
    assert (linear.kind, linear.direction) == (Kind.PADDLE_ERROR, "")
    assert linear.message.startswith("(InvalidArgument) linear(): argument 'X'") and "[operator < linear > error]" in linear.message
    assert (fused.kind, fused.direction) == (Kind.PADDLE_ERROR, "forward")
    assert (combinations.kind, combinations.config) == (Kind.NOT_COMPARED, 'paddle.combinations(Tensor([0],"float32"), r=2, )')


def test_malformed_blocks_are_reported_with_file_and_line_never_guessed():
    result = read('''2025-06-09 23:16:05.160023 GPU 7 1 test begin: paddle.abs(Tensor([2],"float32"), )
[accuracy error] paddle.abs(Tensor([2],"float32"), ) 
 Not equal to tolerance rtol=0.01, atol=0.01
something nobody has seen before
2025-06-09 23:16:05.160023 GPU 7 1 test begin: paddle.abs(Tensor([3],"float32"), )
[accuracy error] paddle.abs(Tensor([4],"float32"), ) 
Mismatched elements: 1 / 3 (33.3%)
[paddle error] 
2025-06-09 23:16:05.160023 GPU 7 1 test begin: paddle.exp(Tensor([3],"float32"), )
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
