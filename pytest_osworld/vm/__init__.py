"""The VM sandbox: QEMU in a container of the QEMU image, a bootable image of the desktop, RAM-snapshot reset."""
