"""Thin typed repositories, one per aggregate; SQL comes from sql/queries."""
