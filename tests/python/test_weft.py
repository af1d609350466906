"""The Python package (python/weft) on the CPU: NumPy arrays through the interpreter path (`weft
call`) and through a library's GPU path on the runtime's fake driver, whose kernels write nothing
(so those tests check shapes, dtypes and messages; tests/gpu/python checks values on a GPU).

Run by ctest (tests/python/CMakeLists.txt) with WEFT (the compiler), WEFT_FAKE_CUDA (the fake
driver) and PYTHONPATH (python/) set; by hand:
    WEFT=build/dev/compiler/driver/weft WEFT_FAKE_CUDA=build/dev/tests/unit/runtime/fake_libcuda.so \
      PYTHONPATH=python python3 -m pytest -q tests/python
"""

import os
import sys

import numpy as np
import pytest

import weft

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "model.weft")


@pytest.fixture(scope="module")
def cpu():
    return weft.compile(MODEL, target="sm_80", device="cpu")


@pytest.fixture(scope="module")
def fake_gpu():
    if not os.environ.get("WEFT_FAKE_CUDA"):
        pytest.skip("WEFT_FAKE_CUDA is not set")
    return weft.compile(MODEL, target="sm_80", device="gpu")


def rng():
    return np.random.default_rng(7)


def test_exports(cpu):
    names = {name for name, _ in cpu.exports()}
    assert names == {"scale_add", "rms", "blocks", "pair"}  # `soft` is polymorphic: per instance
    assert "scale_add : f32[n, d] -> f32[d] -> f32[n, d]" in [s for _, s in cpu.exports()]
    assert cpu.library.source_path == MODEL


def test_interpreter_values(cpu):
    x = rng().standard_normal((3, 4), dtype=np.float32)
    b = rng().standard_normal(4, dtype=np.float32)
    y = cpu.scale_add(x, b)
    assert y.dtype == np.float32 and y.shape == (3, 4)
    np.testing.assert_array_equal(y, x * np.float32(2.0) + b)
    s, q = cpu.pair(b)
    np.testing.assert_array_equal(s, b + np.float32(1.0))
    np.testing.assert_array_equal(q, b * b)


def test_interpreter_polymorphic(cpu):
    x = rng().standard_normal((2, 5))  # f64: `soft` at f64[_, _]
    y = cpu.soft(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=-1, keepdims=True), rtol=1e-12)


def test_interpreter_shape_errors(cpu):
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(weft.ShapeError) as e:
        cpu.scale_add(x, np.zeros(5, np.float32))
    assert str(e.value) == "`scale_add`: parameter `b` expects `f32[d]` but is given f32[5]: axis 0 is 5, not `d` = 4"
    with pytest.raises(weft.ShapeError) as e:
        cpu.blocks(np.zeros(6, np.float32))
    assert "n % 4 == 0" in str(e.value)


def test_fake_gpu_call(fake_gpu):
    x = rng().standard_normal((3, 4), dtype=np.float32)
    y = fake_gpu.scale_add(x, x[0])
    assert y.dtype == np.float32 and y.shape == (3, 4)  # the fake driver's kernels write nothing
    s, q = fake_gpu.pair(np.zeros(5, np.float32))
    assert s.shape == (5,) and q.shape == (5,)
    assert fake_gpu.blocks(np.zeros(8, np.float32)).shape == (8,)


def test_fake_gpu_shape_errors(fake_gpu):
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(weft.ShapeError) as e:
        fake_gpu.scale_add(x, np.zeros(5, np.float32))
    assert str(e.value) == "`scale_add`: parameter `b` expects `f32[d]` but is given f32[5]: axis 0 is 5, not `d` = 4"
    with pytest.raises(weft.ShapeError) as e:
        fake_gpu.scale_add(x.astype(np.float64), np.zeros(4, np.float32))
    assert str(e.value) == ("`scale_add`: parameter `x` expects `f32[n, d]` but is given f64[3, 4]: "
                            "its dtype is f64, not f32")
    with pytest.raises(weft.ShapeError) as e:
        fake_gpu.blocks(np.zeros(6, np.float32))
    assert "n % 4 == 0" in str(e.value)


def test_fake_gpu_instance(fake_gpu):
    y = fake_gpu.soft(np.zeros((2, 3), np.float32))  # builds `soft f32[_, _]` once
    assert y.shape == (2, 3) and y.dtype == np.float32
    assert any(s.startswith("soft : f32[s_0, n]") for s in fake_gpu.soft.signatures())


# ---- the CUDA-tensor path (plans, DLPack) with a stand-in for PyTorch on the fake driver ----


@pytest.fixture
def torch(monkeypatch, fake_gpu):
    import fake_torch
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    return fake_torch


def test_cuda_tensors_plan(fake_gpu, torch):
    f = fake_gpu.scale_add
    x = torch.tensor(rng().standard_normal((3, 4), dtype=np.float32))
    b = torch.tensor(np.ones(4, np.float32))
    y = f(x, b)
    assert isinstance(y, torch.Tensor) and y.is_cuda and tuple(y.shape) == (3, 4) and y.dtype is torch.float32
    assert y.data_ptr() not in (x.data_ptr(), b.data_ptr())  # the buffer the kernel wrote, handed over
    assert len(f._plans) == 1
    f(torch.tensor(np.zeros((3, 4), np.float32)), b)  # same dtypes and shapes: the same plan
    assert len(f._plans) == 1
    assert tuple(f(torch.tensor(np.zeros((5, 4), np.float32)), b).shape) == (5, 4)
    assert len(f._plans) == 2
    s, q = fake_gpu.pair(b)
    assert tuple(s.shape) == (4,) and tuple(q.shape) == (4,) and s.data_ptr() != q.data_ptr()
    # Strided: made contiguous (a copy), then the contiguous key's plan.
    assert tuple(f(torch.tensor(np.zeros((4, 3), np.float32)).t(), b).shape) == (3, 4)


def test_cuda_tensors_checked_at_each_call(fake_gpu, torch):
    f = fake_gpu.scale_add
    x = torch.tensor(np.zeros((3, 4), np.float32))
    f(x, torch.tensor(np.zeros(4, np.float32)))  # a plan for f32[3, 4], f32[4]
    for _ in range(2):  # the first call of a key and a later one say the same
        with pytest.raises(weft.ShapeError) as e:
            f(x, torch.tensor(np.zeros(5, np.float32)))
        assert str(e.value) == ("`scale_add`: parameter `b` expects `f32[d]` but is given f32[5]: "
                                "axis 0 is 5, not `d` = 4")
    with pytest.raises(weft.ShapeError) as e:
        f(torch.tensor(np.zeros((3, 4), np.float64)), torch.tensor(np.zeros(4, np.float32)))
    assert str(e.value) == ("`scale_add`: parameter `x` expects `f32[n, d]` but is given f64[3, 4]: "
                            "its dtype is f64, not f32")
    fake_gpu.blocks(torch.tensor(np.zeros(8, np.float32)))
    for _ in range(2):
        with pytest.raises(weft.ShapeError) as e:
            fake_gpu.blocks(torch.tensor(np.zeros(6, np.float32)))
        assert "n % 4 == 0" in str(e.value)


def test_cuda_tensors_refused(fake_gpu, torch):
    f = fake_gpu.scale_add
    x = torch.tensor(np.zeros((3, 4), np.float32))
    with pytest.raises(TypeError, match="argument 1 is not a CUDA tensor, but argument 0 is"):
        f(x, np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="argument 1 is not a CUDA tensor, but argument 0 is"):
        f(x, torch.tensor(np.zeros(4, np.float32), device=-1))
    with pytest.raises(TypeError, match="argument 1 is on cuda:1, but weft runs on cuda:0"):
        f(x, torch.tensor(np.zeros(4, np.float32), device=1))
    with pytest.raises(TypeError, match="argument 0 is torch.complex64, which weft has no dtype for"):
        f(torch.tensor(np.zeros((3, 4), np.complex64)), torch.tensor(np.zeros(4, np.float32)))
    # CPU tensors take the NumPy path and come back as CPU tensors.
    y = f(torch.tensor(np.zeros((3, 4), np.float32), device=-1), torch.tensor(np.zeros(4, np.float32), device=-1))
    assert isinstance(y, torch.Tensor) and not y.is_cuda and tuple(y.shape) == (3, 4)
