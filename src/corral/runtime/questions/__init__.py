"""ask_question: questions to a person that park the run until answered."""

from corral.runtime.questions.model import Answer, AnswerInput, AskedQuestion, QuestionRecord
from corral.runtime.questions.service import QUESTIONS, Questions, questions_of

__all__ = [
    "QUESTIONS",
    "Answer",
    "AnswerInput",
    "AskedQuestion",
    "QuestionRecord",
    "Questions",
    "questions_of",
]
