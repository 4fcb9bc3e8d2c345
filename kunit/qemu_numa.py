# SPDX-License-Identifier: GPL-2.0
#
# kunit.py --qemu_config for this series: x86_64 under TCG with two vCPUs,
# one per socket, and two NUMA nodes of 2 GiB each that the guest learns
# from ACPI SRAT. The machine itself is described in qemu-numa.args (one
# argument per line), which scripts/test.sh also uses to boot the same
# kernel for the guest userspace tests.
import os

from qemu_config import QemuArchParams

with open(os.path.join(os.path.dirname(__file__), 'qemu-numa.args')) as f:
	MACHINE = [line.strip() for line in f if line.strip()]

QEMU_ARCH = QemuArchParams(linux_arch='x86_64',
			   kconfig='''
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y''',
			   qemu_arch='x86_64',
			   kernel_path='arch/x86/boot/bzImage',
			   kernel_command_line='console=ttyS0',
			   extra_qemu_params=MACHINE)
