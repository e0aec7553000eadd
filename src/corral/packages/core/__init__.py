"""The built-in package: Corral's native tools, loaded like any other package."""
