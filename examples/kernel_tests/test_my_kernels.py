"""My arm_elementwise_mul_s8 against refsim's golden model, on a Cortex-M under QEMU.
Run: ``pytest --refsim-kernels-dir mykernels --refsim-cpu cortex-m4``."""

from hypothesis import Phase, given, settings

from refsim.testing import strategies as rst

FUNCTION = "arm_elementwise_mul_s8"


def test_conformance_cases(refsim_kernels):
    # 300 cases of refsim's conformance generator, in one QEMU start.
    refsim_kernels.check(FUNCTION, cases=300, seed=0)


# One QEMU start per example of 40 cases. No shrinking: every attempt would be a QEMU start,
# and the failing cases are saved as reproducers as they are.
@settings(max_examples=4, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(batch=rst.batches(FUNCTION, size=40))
def test_hypothesis_batches(refsim_kernels, batch):
    refsim_kernels.check_cases(batch)
