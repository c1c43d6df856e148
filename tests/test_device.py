"""The tpu device as torch.cuda presents one: registration, device module, accelerator API."""

from __future__ import annotations

import pytest
import torch
from _subprocess_helpers import run_python


def test_autoload_registers_device() -> None:
    assert torch._C._get_privateuse1_backend_name() == "tpu"
    assert torch.tpu.is_available()
    assert torch.tpu.device_count() == 1
    assert torch.accelerator.current_accelerator() == torch.device("tpu")
    assert torch.accelerator.is_available()
    assert torch.accelerator.device_count() == 1


def test_autoload_opt_out() -> None:
    result = run_python(
        "import torch; print(hasattr(torch, 'tpu'))", {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_import_torch_tpu_before_torch() -> None:
    # torch's autoload then runs while torch_tpu is still half imported.
    result = run_python(
        "import torch_tpu\nimport torch\nprint((torch.ones(3, device='tpu') + 1).cpu().tolist())"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[2.0, 2.0, 2.0]"


def test_no_thread_at_import() -> None:
    code = """
        import os
        import torch
        baseline = len(os.listdir('/proc/self/task'))
        import torch_tpu
        assert torch.tpu.is_available()
        print(baseline, len(os.listdir('/proc/self/task')))
        x = torch.ones(1 << 16, device='tpu') + 1  # not tiny: tiny ops may run inline
        x.cpu()
        print(len(os.listdir('/proc/self/task')))
    """
    result = run_python(code, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    before, after_import = map(int, lines[0].split())
    assert after_import == before  # registering the device starts nothing
    assert int(lines[1]) > after_import  # the stream worker starts on first use


def test_tensor_methods_and_properties() -> None:
    x = torch.arange(4).tpu()
    assert x.is_tpu and x.device == torch.device("tpu", 0)
    assert x.device.type == "tpu"
    assert not torch.arange(2).is_tpu
    assert torch.equal(x.cpu(), torch.arange(4))
    assert x.untyped_storage().is_tpu
    props = torch.tpu.get_device_properties(0)
    assert props.total_memory > 0
    assert "TPU" in torch.tpu.get_device_name()
    assert torch.tpu.get_device_name("tpu:0") == props.name
    assert "total_memory" in repr(props)
    assert (props.driver, props.kind) == ("host", "simulated")


def test_driver_selection() -> None:
    code = """
        import torch
        print(torch.tpu.get_device_properties(0).driver)
    """
    result = run_python(code, {"TORCH_TPU_DRIVER": "host"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "host"


def test_unknown_driver_names_the_registered_ones() -> None:
    # No chip is usable, CPU work goes on, and every tpu call says why, as often as it is made.
    code = """
        import torch
        print(torch.tpu.is_available(), torch.tpu.device_count())
        for _ in range(2):
            try:
                torch.ones(2, device='tpu')
            except RuntimeError as e:
                print(e)
        print((torch.ones(2) + 1).tolist())
    """
    result = run_python(code, {"TORCH_TPU_DRIVER": "xla-someday"})
    assert result.returncode == 0, result.stderr
    message = "TORCH_TPU_DRIVER=xla-someday: no tpu driver of that name (registered: host, pjrt)"
    assert result.stdout.split("\n")[:4] == ["False 0", message, message, "[2.0, 2.0]"]


def test_current_device_and_context_managers() -> None:
    assert torch.tpu.current_device() == 0
    torch.tpu.set_device(0)
    torch.tpu.set_device("tpu:0")
    torch.tpu.set_device(-1)  # ignored, as on CUDA
    with torch.tpu.device(0):
        assert torch.tpu.current_device() == 0
    x = torch.ones(1, device="tpu")
    with torch.tpu.device_of(x):
        assert torch.tpu.current_device() == 0
    assert torch.accelerator.current_device_index() == 0
    torch.accelerator.set_device_index(0)
    torch.tpu.synchronize()
    torch.accelerator.synchronize()


def test_bad_device_index_raises() -> None:
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.empty(2, device="tpu:3")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.tpu.set_device(5)
    with pytest.raises(ValueError):
        torch.tpu.set_device("cpu")
    torch.ones(1, device="tpu").cpu()  # still usable


def test_multiple_devices() -> None:
    code = """
        import torch
        assert torch.tpu.device_count() == 2
        a = torch.arange(6.0, device='tpu:1')
        assert a.device == torch.device('tpu:1')
        b = a.to('tpu:0')
        assert b.device == torch.device('tpu:0')
        assert torch.equal(b.cpu(), torch.arange(6.0))
        for mode in ('debug', 'fused', 'strict'):  # chip to chip: strided, converting, pending
            torch.tpu.set_eager_mode(mode)
            src = torch.arange(12.0, device='tpu:1').view(3, 4) * 2
            dst = torch.empty(4, 3, dtype=torch.float64, device='tpu:0').copy_(src.t())
            assert torch.equal(dst.cpu(), (torch.arange(12.0).view(3, 4) * 2).t().double()), mode
        with torch.tpu.device(1):
            c = torch.zeros(2, device='tpu')
            assert c.device.index == 1
            assert torch.tpu.current_device() == 1
        assert torch.tpu.current_device() == 0
        try:
            torch.add(a, b)
        except RuntimeError as e:
            assert 'same device' in str(e), e
        else:
            raise AssertionError('mixing tpu:0 and tpu:1 must raise')
        print('ok')
    """
    result = run_python(code, {"TORCH_TPU_NUM_DEVICES": "2"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_fork_after_init_is_refused_and_before_init_works() -> None:
    code = """
        import os, torch
        pid = os.fork()
        if pid == 0:
            x = torch.ones(2, device='tpu') * 2   # nothing initialized before the fork
            os._exit(0 if x.cpu().tolist() == [2.0, 2.0] else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WEXITSTATUS(status) == 0, 'fresh child must work'
        torch.ones(2, device='tpu').cpu()
        pid = os.fork()
        if pid == 0:
            try:
                torch.tpu.init()
            except RuntimeError as e:
                os._exit(3 if 'forked subprocess' in str(e) else 4)
            os._exit(5)
        _, status = os.waitpid(pid, 0)
        print(os.WEXITSTATUS(status))
        print(torch.ones(1, device='tpu').cpu().item())
    """
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["3", "1.0"]


def test_device_count_env_and_capacity_env() -> None:
    code = """
        import torch
        print(torch.tpu.device_count(), torch.tpu.get_device_properties(0).total_memory)
        print(torch.tpu.mem_get_info())
    """
    result = run_python(code, {"TORCH_TPU_NUM_DEVICES": "3", "TORCH_TPU_DEVICE_MEMORY": "96MiB"})
    assert result.returncode == 0, result.stderr
    first = result.stdout.split("\n")[0].split()
    assert first == ["3", str(96 << 20)]
    assert f"{96 << 20})" in result.stdout


def test_amp_dtypes_and_misc() -> None:
    assert torch.bfloat16 in torch.tpu.get_amp_supported_dtype()
    assert torch.tpu.is_bf16_supported()
    assert torch.tpu.is_initialized()
    names = {v.name for v in torch.tpu.env_vars()}
    assert {
        "TORCH_TPU_NUM_DEVICES",
        "TORCH_TPU_DEVICE_MEMORY",
        "TORCH_TPU_LAUNCH_BLOCKING",
    } <= names
