"""The relocatable memory model: address space, object stores, the memory mixins, symbolic-pointer
resolution and its models (``strategies``), splitting."""
