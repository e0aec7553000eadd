"""The drive package: file tools (fs_read, fs_write, fs_edit, fs_list, fs_search) and the
``⟦fs:read:…⟧`` attachment reader, loaded through the ``corral.packages`` entry point like
any package."""
