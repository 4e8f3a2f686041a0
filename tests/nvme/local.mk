# SPDX-License-Identifier: MIT
# The NVMe driver on an emulated NVMe controller in a QEMU guest
# (check-nvme.sh): nvme_check is built here and runs only in the guest.
# make check runs check-nvme.sh as one of its tests (it skips, saying
# why, where QEMU, busybox-static or the guest kernel cannot be had);
# make check-nvme runs it alone.
check_PROGRAMS += tests/nvme/nvme_check
tests_nvme_nvme_check_LDADD = libmqblk.a $(URING_LIBS)
TESTS += tests/nvme/check-nvme.sh
EXTRA_DIST += tests/nvme/check-nvme.sh tests/nvme/guest-init.sh

check-nvme: all tests/nvme/nvme_check
	top_srcdir='$(top_srcdir)' top_builddir='$(top_builddir)' \
		$(SHELL) $(top_srcdir)/tests/nvme/check-nvme.sh

# The guest kernel, initramfs, image and console log live in the build tree.
clean-local: clean-nvme
clean-nvme:
	rm -rf tests/nvme/kernel tests/nvme/guest

.PHONY: check-nvme clean-nvme
