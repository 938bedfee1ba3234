"""Test support shared by every test package: real servers on 127.0.0.1 and requirement checks."""
