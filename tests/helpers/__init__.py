"""What the tests share besides fixtures (model builders, fakes, checks):
`from tests.helpers import model_zoo`."""
